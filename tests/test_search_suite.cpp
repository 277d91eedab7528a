// The suite (issue 36): evo's default strategy on every landscape of tests/data/suite.json (the
// tuning landscapes and the held-out ones), scored as bench/kt_compare.py scores it and set against
// Kernel Tuner's strategies' figures recorded there. Kernel Tuner itself is not on CI's machine; most
// of its strategies repeat per seed, so their recorded figures are what they would give again
// (differential evolution and Bayesian optimisation do not, so each figure is the best of the runs
// recorded: docs/search.md). Both the score and the rank score (the seeds aggregated as the
// methodology's software aggregates runs) are set against Kernel Tuner's best.
// evo runs the same seeds (0 to 19) through the same run loop as `evo run --replay`, so its figures
// here are kt_compare's. Each landscape is a test of its own (ctest spreads them over the cores), and
// each writes its rows into docs/results/suite.md. A landscape whose entry names a sibling
// (`transfer_from`: the kernel measured on another GPU or problem) runs again with it, as `evo run`
// has it from its database or --transfer-from.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "engine/file_lock.h"
#include "engine/replay.h"
#include "engine/run.h"
#include "engine/search/strategy.h"
#include "engine/search/transfer.h"
#include "population/store.h"
#include "tests/stops_at_the_best.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

const fs::path kData = test::source_root() / "tests" / "data";

// The autotuning methodology's aggregate performance score (Willemsen, van Nieuwpoort, van
// Werkhoven, FGCS 2024), as bench/kt_compare.py's MethodologyScore computes it (its docstring has
// the definition): the mean, over the budgets from where random search is expected half way from the
// median to the optimum to where it is 96 % of the way, of the mean best placed between random
// search's expected best (0) and the optimum (1).
class MethodologyScore {
 public:
  MethodologyScore(std::vector<double> times, std::size_t failures) : valid_(std::move(times)) {
    std::sort(valid_.begin(), valid_.end());  // best first
    optimum_ = valid_.front();
    worst_first_.assign(failures, NAN);  // failures the worst of all
    worst_first_.insert(worst_first_.end(), valid_.rbegin(), valid_.rend());
    start_ = cutoff(0.5);
    end_ = std::max(start_, cutoff(0.96));
  }
  std::size_t start() const { return start_; }
  std::size_t end() const { return end_; }

  // curves: per seed, the best after M = 1 .. end() evaluations (INFINITY before a valid one).
  // B(M) the seeds' mean best; a budget where one has found nothing valid is left out.
  double score(const std::vector<std::vector<double>>& curves) const {
    return mean_p(curves, [](const std::vector<double>& bests) -> double {
      double mean = 0;
      for (double b : bests) {
        if (!std::isfinite(b)) return NAN;
        mean += b;
      }
      return mean / static_cast<double>(bests.size());
    });
  }

  // The rank score: B(M) as the methodology's software aggregates runs (kt_compare's rank_best):
  // each seed's best replaced by its rank among the valid times, B(M) the valid time at the seeds'
  // mean rank rounded half to even; a seed with nothing valid yet is left out, a budget where none
  // has one too. A seed one rank behind counts the same whether it is 2x or 100x the optimum.
  double rank_score(const std::vector<std::vector<double>>& curves) const {
    return mean_p(curves, [this](const std::vector<double>& bests) -> double {
      double sum = 0;
      std::size_t n = 0;
      for (double b : bests)
        if (std::isfinite(b)) sum += double(std::lower_bound(valid_.begin(), valid_.end(), b) - valid_.begin()), ++n;
      if (n == 0) return NAN;
      const auto at = static_cast<std::size_t>(std::nearbyint(sum / double(n)));
      return valid_[std::min(valid_.size() - 1, at)];
    });
  }

 private:
  // The mean over the range of P(M) = (B(M) - R(M)) / (optimum - R(M)), B(M) = best_at(the seeds'
  // bests after M); a budget where best_at gives NaN, or R(M) is a failure or the optimum, is left
  // out (the methodology's NaN).
  template <typename BestAt>
  double mean_p(const std::vector<std::vector<double>>& curves, BestAt best_at) const {
    double sum = 0;
    std::size_t n = 0;
    std::vector<double> bests(curves.size());
    for (std::size_t m = start_; m <= end_; ++m) {
      const double r = random_best(m);
      for (std::size_t s = 0; s < curves.size(); ++s) bests[s] = curves[s][m - 1];
      const double b = best_at(bests);
      if (std::isnan(r) || r == optimum_ || std::isnan(b)) continue;
      sum += (b - r) / (optimum_ - r);
      ++n;
    }
    return n ? sum / static_cast<double>(n) : NAN;
  }

  // The evaluations random search needs, in expectation, to get `percentile` of the way from the
  // median to the optimum (the methodology's searchspace_statistics.cutoff_point).
  std::size_t cutoff(double percentile) const {
    const std::size_t n = valid_.size();
    const double median = n % 2 ? valid_[(n - 1) / 2] : (valid_[n / 2 - 1] + valid_[n / 2]) / 2;
    const double target = optimum_ + (median - optimum_) * (1 - percentile);
    std::size_t i = 0;
    while (valid_[n - 1 - i] > target) ++i;  // worst first, the first at or below the target
    return std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(double(i) / double(n + 1 - i))));
  }
  // Random search without replacement: the value at index round(M (N + 1) / (M + 1)) of all N
  // configurations worst first (Python's round: half to even, as nearbyint).
  double random_best(std::size_t m) const {
    const std::size_t n = worst_first_.size();
    const auto at = static_cast<std::size_t>(std::nearbyint(double(m) * double(n + 1) / double(m + 1)));
    return worst_first_[std::min(n - 1, at)];
  }

  std::vector<double> valid_, worst_first_;
  double optimum_ = 0;
  std::size_t start_ = 1, end_ = 1;
};

TEST(MethodologyScoreOf, RandomSearchsExpectationIsZeroAndTheOptimumOne) {
  // Ten configurations 1..10 µs and two failures. Median 5.5: half way to the optimum is 3.25, so
  // random search needs the 3 of 10 at or below it: i = 7 worse ones, ceil(7 / 4) = 2 evaluations;
  // 96 % of the way is 1.18: i = 9, ceil(9 / 2) = 5.
  std::vector<double> times{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  MethodologyScore s(times, 2);
  EXPECT_EQ(s.start(), 2u);
  EXPECT_EQ(s.end(), 5u);
  const std::vector<double> at_optimum(5, 1.0);
  EXPECT_DOUBLE_EQ(s.score({at_optimum, at_optimum}), 1.0);
  // Random's expected best at M, the value at index round(M * 13 / (M + 1)) of [F, F, 10, 9, ..., 1]:
  // M = 2: 8.67 -> 9, 3 µs; 3: 9.75 -> 10, 2 µs; 4: 10.4 -> 10, 2 µs; 5: 10.83 -> 11, 1 µs, the
  // optimum: left out.
  const std::vector<double> random{INFINITY, 3, 2, 2, 1};
  EXPECT_NEAR(s.score({random}), 0.0, 1e-12);
  // Halfway between random and the optimum at each scored budget: 0.5.
  const std::vector<double> half{INFINITY, 2, 1.5, 1.5, 1};
  EXPECT_NEAR(s.score({half}), 0.5, 1e-12);
  // Two seeds, one at the optimum from M = 2 and one at random's: their mean is half way.
  EXPECT_NEAR(s.score({at_optimum, random}), 0.5, 1e-12);
  // A seed that has found nothing valid at a budget leaves that budget out: M = 2 here, where
  // counted it would pull the mean to 3 (0); at 3 and 4 the two seeds' mean is half way.
  const std::vector<double> late{INFINITY, INFINITY, 1, 1, 1};
  EXPECT_NEAR(s.score({late, random}), 0.5, 1e-12);
}

TEST(MethodologyScoreOf, RankScoreAveragesRanksNotTimes) {
  // The space of the test above: range M = 2 .. 4 (5 left out), R(M) = 3, 2, 2 µs.
  std::vector<double> times{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  MethodologyScore s(times, 2);
  const std::vector<double> at_optimum(5, 1.0), worst(5, 10.0);
  EXPECT_DOUBLE_EQ(s.rank_score({at_optimum, at_optimum}), 1.0);
  // Ranks 0 and 9: the mean 4.5 rounds half to even, to 4: B(M) = 5 µs, P = -1, -3, -3. Averaged as
  // times (5.5 µs) the score would be -2.75.
  EXPECT_NEAR(s.rank_score({at_optimum, worst}), -7.0 / 3.0, 1e-12);
  EXPECT_NEAR(s.score({at_optimum, worst}), -2.75, 1e-12);
  // A seed with nothing valid yet is left out, not the budget: at M = 2 the random seed alone
  // (0); at 3 and 4 ranks 0 and 1, mean 0.5 to 0: the optimum (1). The score leaves M = 2 out.
  const std::vector<double> late{INFINITY, INFINITY, 1, 1, 1}, random{INFINITY, 3, 2, 2, 1};
  EXPECT_NEAR(s.rank_score({late, random}), 2.0 / 3.0, 1e-12);
  // A seed at the worst rank counts the same whether the worst is 10 µs or 1 000: the same ranks
  // (and the same range) in both spaces, and the same rank score; the score falls with the time.
  std::vector<double> long_tail = times;
  long_tail.back() = 1000;
  MethodologyScore tail(long_tail, 2);
  const std::vector<double> worst_of_tail(5, 1000.0);
  EXPECT_NEAR(tail.rank_score({at_optimum, worst_of_tail}), -7.0 / 3.0, 1e-12);
  EXPECT_LT(tail.score({at_optimum, worst_of_tail}), -100.0);
}

struct SuiteEntry {
  std::string file, kt_best_by, gap, source;
  std::string transfer_from;  // a sibling landscape (the kernel on another GPU or problem), or ""
  double kt_best_score = 0;
  double kt_best_rank_score = 0;  // the best rank score among Kernel Tuner's strategies
  std::string kt_best_rank_by;
  std::vector<double> kt_best_shares;
  std::string level_with;  // a Kernel Tuner strategy whose shares evo must be level with (a gap's test)
  std::vector<double> level_shares;
  std::size_t level_from = 0;
  std::size_t level_until = 4;  // the budgets [level_from, level_until) are asserted
  bool score_held = false;      // a gap in shares only: the score is still asserted
};

std::vector<SuiteEntry> read_suite() {
  std::ifstream in(kData / "suite.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  std::vector<SuiteEntry> out;
  for (const auto& l : j.at("landscapes")) {
    SuiteEntry e;
    e.file = l.at("file").get<std::string>();
    e.kt_best_score = l.at("kt_best_score").get<double>();
    e.kt_best_by = l.at("kt_best_score_by").get<std::string>();
    e.kt_best_shares = l.at("kt_best_shares").get<std::vector<double>>();
    e.kt_best_rank_score = l.at("kt_best_rank_score").get<double>();
    e.kt_best_rank_by = l.at("kt_best_rank_score_by").get<std::string>();
    e.source = l.at("source").get<std::string>();
    e.gap = l.value("gap", "");
    e.transfer_from = l.value("transfer_from", "");
    if (l.contains("level_with")) {
      e.level_with = l["level_with"].at("strategy").get<std::string>();
      e.level_shares = l["level_with"].at("shares").get<std::vector<double>>();
      e.level_from = l["level_with"].at("from_budget").get<std::size_t>();
      e.level_until = l["level_with"].value("until_budget", std::size_t{4});
    }
    e.score_held = l.value("score_held", false);
    out.push_back(std::move(e));
  }
  return out;
}

// Every landscape of tests/data (but the synthetic one) and tests/data/held_out is in the suite.
TEST(SearchSuite, HoldsEveryRecordedLandscape) {
  std::set<std::string> listed;
  for (const auto& e : read_suite()) {
    EXPECT_TRUE(fs::exists(kData / e.file)) << e.file;
    EXPECT_EQ(e.kt_best_shares.size(), 4u) << e.file;
    if (!e.gap.empty()) {  // a gap says what is asserted instead
      EXPECT_FALSE(e.level_with.empty()) << e.file << ": a gap without level_with";
      EXPECT_EQ(e.level_shares.size(), 4u) << e.file;
      EXPECT_LT(e.level_from, e.level_until) << e.file << ": level_with asserts no budget";
      EXPECT_LE(e.level_until, 4u) << e.file;
    }
    listed.insert(e.file);
  }
  for (const fs::path& dir : {kData, kData / "held_out"})
    for (const auto& f : fs::directory_iterator(dir)) {
      const std::string n = f.path().filename().string();
      if (n.rfind("landscape_", 0) != 0 || f.path().extension() != ".json" || n == "landscape_synthetic.json") continue;
      const std::string rel = dir == kData ? n : "held_out/" + n;
      EXPECT_TRUE(listed.count(rel)) << rel << " is not in tests/data/suite.json";
    }
}

// Replaces this landscape's row of docs/results/suite.md's table (the line holding its marker; a
// new one goes after the last row of its own table, the suite's or the siblings', so that it is not
// read as a row of the table below). The landscapes' tests run side by side: one at a time writes.
// A tree without docs: print only.
void write_row_into_docs(const std::string& name, const std::string& row) {
  const fs::path doc = test::source_root() / "docs" / "results" / "suite.md";
  if (!fs::exists(doc)) return;
  FileLock lock = FileLock::acquire(fs::temp_directory_path() / "evo-suite-doc.lock");
  std::stringstream ss;
  ss << std::ifstream(doc).rdbuf();
  std::string text = ss.str();
  const std::string marker = "<!-- suite:" + name + " -->";
  const auto at = text.find(marker);
  if (at == std::string::npos) {
    // The last row of the same table: a transfer row's marker names "transfer:", a suite row's not.
    const bool transfer_row = name.rfind("transfer:", 0) == 0;
    std::size_t last = std::string::npos;
    for (auto p = text.find("<!-- suite:"); p != std::string::npos; p = text.find("<!-- suite:", p + 1))
      if ((text.compare(p + 11, 9, "transfer:") == 0) == transfer_row) last = p;
    const auto after = last == std::string::npos ? std::string::npos : text.find('\n', last);
    if (after == std::string::npos) {
      if (!text.empty() && text.back() != '\n') text += '\n';
      text += row;
    } else {
      text.insert(after + 1, row);
    }
  } else {
    const auto begin = text.rfind('\n', at) + 1;  // npos + 1 = 0: the first line
    const auto end = text.find('\n', at);
    text.replace(begin, end == std::string::npos ? std::string::npos : end - begin + 1, row);
  }
  std::ofstream(doc) << text;
}

// Per seed, the best after M = 1 .. longest new evaluations of evo's default (with `options`) on
// the landscape, through the run loop as `evo run --replay` runs it; `transfer` as `evo run` gives it
// from related tasks (empty: a fresh database).
std::vector<std::vector<double>> best_curves(ReplayEvaluator& ev, const KnobSpace& space, double optimum,
                                             std::size_t longest, int seeds,
                                             const std::map<std::string, std::string>& options,
                                             const std::vector<Config>& transfer) {
  std::vector<std::vector<double>> curves;
  for (int seed = 0; seed < seeds; ++seed) {
    TempDir d;
    Store store(d.path / "evo.db");
    StrategyContext ctx{ev.profile(), space, 0, {}, "", "", {}};
    ctx.seed = static_cast<std::uint64_t>(seed);
    ctx.options = options;
    ctx.transfer = transfer;
    auto s = make_strategy("evo", ctx);
    RunOptions o;
    o.strategy = "evo";
    o.seed = static_cast<std::uint64_t>(seed);
    o.budget = static_cast<std::int64_t>(longest);
    test::StopsAtTheBest at_best(ev, optimum);
    o.stop = at_best.flag();
    const RunSummary r = run_search(ev.profile(), *s, at_best, store, o);
    std::vector<double> curve;
    double best = INFINITY;
    for (const auto& e : store.evaluations_of_run(r.run_id)) {
      if (e.reused) continue;
      if (e.eval.measured()) best = std::min(best, e.eval.fast.p50_us);
      curve.push_back(best);
      if (curve.size() == longest) break;
    }
    curve.resize(longest, best);  // stopped at the optimum (or the space ran out): what it had
    curves.push_back(std::move(curve));
  }
  return curves;
}

// Shares of the seeds within 2 % of the optimum at each budget.
std::vector<double> shares_at(const std::vector<std::vector<double>>& curves, const std::vector<std::size_t>& budgets,
                              double optimum) {
  std::vector<double> shares;
  for (auto b : budgets) {
    double near = 0;
    for (const auto& c : curves) near += c[b - 1] <= optimum * 1.02 ? 1 : 0;
    shares.push_back(100.0 * near / double(curves.size()));
  }
  return shares;
}

// " 7/13/26/38" style cells of a table row: the budgets, evo's shares (each marked ✗ where below
// Kernel Tuner's best) and Kernel Tuner's best shares.
std::string budgets_text(const std::vector<std::size_t>& budgets) {
  std::string t;
  for (std::size_t i = 0; i < budgets.size(); ++i) t += (i ? "/" : "") + std::to_string(budgets[i]);
  return t;
}
std::string shares_cells(const std::vector<double>& shares, const std::vector<double>& kt_best) {
  std::ostringstream t;
  char buf[64];
  for (std::size_t i = 0; i < shares.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.0f%s", i ? " / " : " ", shares[i], shares[i] < kt_best[i] ? " ✗" : "");
    t << buf;
  }
  t << " |";
  for (std::size_t i = 0; i < kt_best.size(); ++i) t << (i ? " / " : " ") << kt_best[i];
  return t.str();
}

class SearchSuite : public ::testing::TestWithParam<std::string> {};

// evo's default, seeds 0..19 (while tuning, EVO_SUITE_SEEDS=N: seeds 0..N-1, and
// EVO_SUITE_OPTIONS=k=v,k=v: evo's options; either way nothing is written):
// its methodology score at or above Kernel Tuner's best, and its share within 2 % at or above
// theirs at the two largest budgets, on every landscape without a recorded gap. On a gap, what the
// entry asks instead. Every share and score goes into docs/results/suite.md.
TEST_P(SearchSuite, EvoAtOrAboveKernelTunersBest) {
  SuiteEntry entry;
  for (auto& e : read_suite())
    if (fs::path(e.file).stem().string() == GetParam()) entry = e;
  ASSERT_FALSE(entry.file.empty()) << GetParam() << " is not in tests/data/suite.json";
  const char* seeds_env = std::getenv("EVO_SUITE_SEEDS");
  const int seeds = seeds_env ? std::max(1, std::atoi(seeds_env)) : 20;
  std::map<std::string, std::string> options;
  const char* options_env = std::getenv("EVO_SUITE_OPTIONS");
  if (options_env) {
    std::stringstream ss(options_env);
    for (std::string kv; std::getline(ss, kv, ',');)
      if (auto eq = kv.find('='); eq != std::string::npos) options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  spdlog::set_level(spdlog::level::warn);

  ReplayEvaluator ev(kData / entry.file);
  KnobSpace space(ev.profile());
  std::vector<double> times;
  std::size_t failures = 0;
  for (const auto& p : ev.landscape().points)
    if (p.status == Status::Measured) times.push_back(p.p50_us);
    else ++failures;
  ASSERT_FALSE(times.empty());
  const double optimum = *std::min_element(times.begin(), times.end());
  const MethodologyScore methodology(times, failures);
  const std::size_t n = ev.landscape().points.size();
  std::vector<std::size_t> budgets{25, 50, 100, 200};  // kt_compare's default_budgets
  if (n < 2000) {
    budgets.clear();
    for (double s : {0.05, 0.1, 0.2, 0.3}) budgets.push_back(std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(s * double(n)))));
  }
  const std::size_t longest = std::max(budgets.back(), methodology.end());

  const std::vector<std::vector<double>> curves = best_curves(ev, space, optimum, longest, seeds, options, {});
  const double score = methodology.score(curves);
  const double rank_score = methodology.rank_score(curves);
  const std::vector<double> shares = shares_at(curves, budgets, optimum);

  // The rows: evo's, then Kernel Tuner's best, each share marked where evo is below theirs.
  std::ostringstream t;
  char buf[300];
  std::snprintf(buf, sizeof buf, ") | %.3f | %.3f (%s) | %.3f | %.3f (%s) |", score, entry.kt_best_score,
                entry.kt_best_by.c_str(), rank_score, entry.kt_best_rank_score, entry.kt_best_rank_by.c_str());
  t << "| `" << GetParam() << "` (" << budgets_text(budgets) << buf << shares_cells(shares, entry.kt_best_shares);
  t << " | " << entry.gap << " <!-- suite:" << GetParam() << " --> |\n";
  std::cout << t.str();
  if (!seeds_env && !options_env) write_row_into_docs(GetParam(), t.str());

  // With a sibling landscape (the same kernel measured on another GPU or problem), what `evo run`
  // does when the database or --transfer-from holds it: its fastest configurations first. Kernel
  // Tuner's strategies have no such input; their figures are the same.
  if (!entry.transfer_from.empty()) {
    const TransferSource src = transfer_from_landscape(kData / entry.transfer_from);
    std::vector<Config> transfer;
    for (const auto& c : transfer_candidates({src}, space, ev.profile().baseline, 64)) transfer.push_back(c.config);
    ASSERT_FALSE(transfer.empty()) << entry.transfer_from << ": nothing maps into this space";
    const auto with = best_curves(ev, space, optimum, longest, seeds, options, transfer);
    const double t_score = methodology.score(with);
    const std::vector<double> t_shares = shares_at(with, budgets, optimum);
    std::ostringstream tr;
    std::snprintf(buf, sizeof buf, ") | %.3f | %.3f | %.3f (%s) |", t_score, score, entry.kt_best_score, entry.kt_best_by.c_str());
    tr << "| `" << GetParam() << "` | `" << fs::path(entry.transfer_from).stem().string() << "` (" << budgets_text(budgets)
       << buf << shares_cells(t_shares, entry.kt_best_shares);
    tr << " | <!-- suite:transfer:" << GetParam() << " --> |\n";
    std::cout << tr.str();
    if (!seeds_env && !options_env) write_row_into_docs("transfer:" + GetParam(), tr.str());
    EXPECT_GE(t_score, entry.kt_best_score) << "with transfer from " << entry.transfer_from
                                            << ", evo's score below Kernel Tuner's " << entry.kt_best_by;
    EXPECT_GE(methodology.rank_score(with), entry.kt_best_rank_score)
        << "with transfer from " << entry.transfer_from << ", evo's rank score below Kernel Tuner's " << entry.kt_best_rank_by;
  }

  // Both scores, on every landscape without a gap and on a gap that holds the score.
  if (entry.gap.empty() || entry.score_held) {
    EXPECT_GE(score, entry.kt_best_score) << "evo's methodology score below Kernel Tuner's " << entry.kt_best_by;
    EXPECT_GE(rank_score, entry.kt_best_rank_score) << "evo's rank score below Kernel Tuner's " << entry.kt_best_rank_by;
  }
  if (entry.gap.empty()) {
    for (std::size_t i = 2; i < budgets.size(); ++i)
      EXPECT_GE(shares[i], entry.kt_best_shares[i]) << "evo's share within 2 % at " << budgets[i] << " evaluations";
  } else {
    for (std::size_t i = entry.level_from; i < std::min(budgets.size(), entry.level_until); ++i)
      EXPECT_GE(shares[i], entry.level_shares[i]) << "evo's share at " << budgets[i] << " below " << entry.level_with << "'s";
  }
}

INSTANTIATE_TEST_SUITE_P(Suite, SearchSuite,
                         ::testing::Values("landscape_kt_matmul_h100", "landscape_kt_stencil_h100", "landscape_kt_pnpoly_h100",
                                           "landscape_kt_zeromean_h100", "landscape_kt_zeromean_h_h100",
                                           "landscape_sdpa_fp8_h100", "landscape_sdpa_fp8_h200", "landscape_sdpa_fp8pv_h100",
                                           "landscape_sdpa_fp8pv_d128_h100", "landscape_convolution_milo_h100",
                                           "landscape_convolution_milo_h200", "landscape_kt_convolution_h200",
                                           "landscape_kt_convolution_2080ti", "landscape_kt_stencil_h200",
                                           "landscape_kt_zeromean_h200", "landscape_kt_zeromean_h_h200",
                                           "landscape_kt_pnpoly_h200", "landscape_kt_spmv_h200",
                                           "landscape_kt_reduction_h200", "landscape_kt_expdist_h200",
                                           "landscape_gemm_fp16_h200", "landscape_sdpa_fp16_h200",
                                           "landscape_sdpa_fp16_wgmma_h200",
                                           "landscape_sdpa_fp16_d128_h200", "landscape_sdpa_fp8_d128_h200",
                                           "landscape_sdpa_fp16_wgmma_d128_h200", "landscape_sdpa_fp8_wgmma_h200",
                                           "landscape_sdpa_fp8_wgmma_d128_h200", "landscape_sdpa_fp8pv_wgmma_h200"),
                         [](const auto& info) { return info.param.substr(10); });

// The parametrised list and the suite's file name the same landscapes.
TEST(SearchSuite, ItsTestsAreTheSuitesLandscapes) {
  std::set<std::string> in_file;
  for (const auto& e : read_suite()) in_file.insert(fs::path(e.file).stem().string());
  std::set<std::string> tested;
  for (const auto* info : {::testing::UnitTest::GetInstance()})
    for (int i = 0; i < info->total_test_suite_count(); ++i) {
      const auto* suite = info->GetTestSuite(i);
      if (std::string(suite->name()) != "Suite/SearchSuite") continue;
      for (int k = 0; k < suite->total_test_count(); ++k) {
        const std::string name = suite->GetTestInfo(k)->name();  // EvoAtOrAboveKernelTunersBest/<landscape>
        tested.insert("landscape_" + name.substr(name.find('/') + 1));
      }
    }
  EXPECT_EQ(tested, in_file);
}

}  // namespace
}  // namespace evo
