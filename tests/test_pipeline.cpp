// The run loop as a pipeline (engine/run.h): with compile workers and a GPU that cost real time
// (a replay with simulated per-phase delays), the run keeps both busy, so its wall time stays near
// the bound no schedule can beat, max(compile seconds / workers, GPU seconds); and it asks the
// strategy for proposals ahead of the compile pool while results are still pending.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "engine/replay.h"
#include "population/landscape.h"
#include "engine/run.h"
#include "engine/search/strategy.h"
#include "population/store.h"
#include "tests/slow_compile_landscape.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

const fs::path kLandscape = test::source_root() / "tests" / "data" / "landscape_synthetic.json";

// An exhaustive sweep of `budget` new evaluations through `ev` into `store`; `wrap`, when given,
// wraps the strategy (to watch it or slow it).
RunSummary sweep(ReplayEvaluator& ev, Store& store, std::int64_t budget,
                 const std::function<std::unique_ptr<Strategy>(std::unique_ptr<Strategy>)>& wrap = {}) {
  KnobSpace space(ev.profile());
  StrategyContext ctx{ev.profile(), space, 7, {}, "", "", {}};
  std::unique_ptr<Strategy> strategy = make_strategy("exhaustive", ctx);
  if (wrap) strategy = wrap(std::move(strategy));
  RunOptions o;
  o.strategy = "exhaustive";
  o.budget = budget;
  o.sanitize_elites = false;
  return run_search(ev.profile(), *strategy, ev, store, o);
}

// Wraps a strategy and counts how many of its proposals were pending (not yet observed) at most.
class Watching : public Strategy {
 public:
  explicit Watching(std::unique_ptr<Strategy> inner) : inner_(std::move(inner)) {}
  std::vector<Candidate> propose(std::size_t n) override {
    auto out = inner_->propose(n);
    for (const auto& c : out) pending_.insert(config_hash(c.config));
    max_pending_ = std::max(max_pending_, pending_.size());
    return out;
  }
  void observe(const Evaluation& e) override {
    if (pending_.erase(e.config_hash) == 0) ++unproposed_observed_;  // the baseline
    inner_->observe(e);
  }
  std::size_t max_pending_ = 0, unproposed_observed_ = 0;
  std::set<std::string> pending_;

 private:
  std::unique_ptr<Strategy> inner_;
};

struct PipelineRun {
  RunSummary summary;
  double wall_s = 0;
  std::size_t max_pending = 0;
};

PipelineRun run_with_cost(ReplayCost cost, std::int64_t budget, const std::string& strategy_name = "random") {
  test::TempDir dir;
  ReplayEvaluator ev(kLandscape, cost);
  KnobSpace space(ev.profile());
  StrategyContext ctx{ev.profile(), space, 7, {}, "", "", {}};
  Watching strategy(make_strategy(strategy_name, ctx));
  Store store(dir.path / "evo.db");
  RunOptions o;
  o.strategy = strategy_name;
  o.budget = budget;
  o.sanitize_elites = false;
  const auto t0 = std::chrono::steady_clock::now();
  PipelineRun r;
  r.summary = run_search(ev.profile(), strategy, ev, store, o);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.max_pending = strategy.max_pending_;
  EXPECT_EQ(r.summary.new_evaluations, budget);
  // Every proposal is observed by the end but the extras compiled on idle workers at the
  // budget's end that lost the race, each dropped and said (engine/run.cpp).
  EXPECT_EQ(strategy.pending_.size(), r.summary.dropped_at_end) << "every proposal observed or said to be dropped";
  return r;
}

TEST(Pipeline, CompileBoundRunStaysWithinFifteenPercentOfTheBound) {
  const ReplayCost cost{0.05, 0.01, 4};  // 120 x 0.05 s over 4 workers = 1.5 s; the GPU < 1.2 s
  const PipelineRun r = run_with_cost(cost, 120);
  const double gpu_s = r.summary.seconds_green;  // simulated GPU seconds the candidates reported
  const double bound = std::max(r.summary.seconds_compile / cost.jobs, gpu_s);
  EXPECT_NEAR(r.summary.seconds_compile, 120 * cost.compile_s, 1e-6);
  EXPECT_NEAR(bound, 1.5, 1e-6) << "compile-bound by construction";
  EXPECT_LE(r.wall_s, 1.15 * bound) << "wall " << r.wall_s << " s against the bound " << bound << " s";
  EXPECT_GE(r.max_pending, 2 * cost.jobs) << "the strategy is asked ahead of the compile workers";
  EXPECT_GE(r.summary.seconds_gpu, gpu_s * 0.99) << "the loop's own account of the GPU's busy time";
}

TEST(Pipeline, GpuBoundRunStaysWithinFifteenPercentOfTheBound) {
  const ReplayCost cost{0.02, 0.03, 4};  // compile 100 x 0.02 / 4 = 0.5 s; GPU 0.03 s per valid candidate
  const PipelineRun r = run_with_cost(cost, 100);
  const double gpu_s = r.summary.seconds_green;
  const double bound = std::max(r.summary.seconds_compile / cost.jobs, gpu_s);
  ASSERT_GT(gpu_s, r.summary.seconds_compile / cost.jobs) << "GPU-bound by construction";
  EXPECT_LE(r.wall_s, 1.15 * bound) << "wall " << r.wall_s << " s against the bound " << bound << " s";
  EXPECT_LE(r.summary.seconds_gpu, r.wall_s);
  EXPECT_GE(r.summary.seconds_gpu / r.wall_s, 0.85) << "the GPU is kept busy";
}

// Several GPUs (`--devices all`) measure side by side, each from its own thread, fed by one compile
// pool and one loop that records every result. With compiles far from the bound, two simulated
// GPUs measure at least 1.8 times as many candidates a second as one, and the pipeline's bound
// is the GPU seconds over the two.
TEST(Pipeline, TwoGpusMeasureAtLeast1_8TimesAsManyCandidatesASecondAsOne) {
  ReplayCost cost{0.002, 0.04, 4, 1};  // compile 100 x 0.002 / 4 = 0.05 s; GPU 0.04 s a valid candidate
  const PipelineRun one = run_with_cost(cost, 100, "exhaustive");
  cost.gpus = 2;
  const PipelineRun two = run_with_cost(cost, 100, "exhaustive");
  ASSERT_EQ(one.summary.measured, two.summary.measured) << "the same candidates, in the same order";
  const double gpu_s = one.summary.seconds_green;  // the GPU seconds the candidates reported
  ASSERT_GT(gpu_s, 10 * one.summary.seconds_compile / cost.jobs) << "not compile-bound, by construction";
  const double rate_one = one.summary.new_evaluations / one.wall_s, rate_two = two.summary.new_evaluations / two.wall_s;
  EXPECT_GE(rate_two / rate_one, 1.8) << "one GPU " << one.wall_s << " s, two " << two.wall_s << " s";
  EXPECT_EQ(one.summary.gpus, 1u);
  EXPECT_EQ(two.summary.gpus, 2u);
  EXPECT_NEAR(two.summary.bound_s(), two.summary.seconds_gpu / 2, 1e-9) << "the bound divides the GPU seconds";
  EXPECT_LE(two.wall_s, 1.15 * two.summary.bound_s()) << "each GPU kept busy";
}

// A replay that notes when each lane's measurements began and ended.
class TimedLanes : public ReplayEvaluator {
 public:
  using ReplayEvaluator::ReplayEvaluator;
  Evaluation measure(const Prepared& p, std::size_t lane) override {
    const auto t0 = std::chrono::steady_clock::now();
    Evaluation e = ReplayEvaluator::measure(p, lane);
    std::lock_guard<std::mutex> lock(m_);
    spans_[lane].push_back({t0, std::chrono::steady_clock::now()});
    return e;
  }
  // The longest a lane waited between two of its measurements, in seconds.
  double longest_wait() {
    std::lock_guard<std::mutex> lock(m_);
    double longest = 0;
    for (auto& [lane, spans] : spans_)
      for (std::size_t k = 1; k < spans.size(); ++k)
        longest = std::max(longest, std::chrono::duration<double>(spans[k].first - spans[k - 1].second).count());
    return longest;
  }
  std::size_t lanes_used() {
    std::lock_guard<std::mutex> lock(m_);
    return spans_.size();
  }

 private:
  std::mutex m_;
  std::map<std::size_t, std::vector<std::pair<std::chrono::steady_clock::time_point, std::chrono::steady_clock::time_point>>> spans_;
};

// A strategy slow to hear of a result, as a loop held by a database checkpoint or a long fit.
class SlowToObserve : public Strategy {
 public:
  SlowToObserve(std::unique_ptr<Strategy> inner, double seconds) : inner_(std::move(inner)), seconds_(seconds) {}
  std::vector<Candidate> propose(std::size_t n) override { return inner_->propose(n); }
  void observe(const Evaluation& e) override {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds_));
    inner_->observe(e);
  }

 private:
  std::unique_ptr<Strategy> inner_;
  double seconds_;
};

// Each GPU holds its next candidate queued and starts it the moment the current ends: it does not
// wait for the loop to wake, record the other GPU's result and choose (engine/run.cpp). Two GPUs
// of 40 ms a candidate that finish together, a loop that takes 20 ms to record each result: before
// the queue, the second GPU waited for the first's recording (about 20 ms) every time they did.
TEST(Pipeline, EachGpuStartsItsQueuedCandidateWithoutWaitingForTheLoopToRecordAnothersResult) {
  test::TempDir dir;
  TimedLanes ev(kLandscape, ReplayCost{0.001, 0.08, 4, 2});
  Store store(dir.path / "evo.db");
  const RunSummary s = sweep(ev, store, 24, [](std::unique_ptr<Strategy> inner) {
    return std::make_unique<SlowToObserve>(std::move(inner), 0.02);
  });
  EXPECT_EQ(s.new_evaluations, 24);
  EXPECT_EQ(ev.lanes_used(), 2u);
  EXPECT_LT(ev.longest_wait(), 0.01) << "a GPU waited for the loop between two of its candidates";
}

// A replay whose second GPU is lost (its worker cannot be started again) at its fourth candidate.
class LosesItsSecondGpu : public ReplayEvaluator {
 public:
  using ReplayEvaluator::ReplayEvaluator;
  Evaluation measure(const Prepared& p, std::size_t lane) override {
    if (lane == 1 && ++second_ == 4) {
      lost_on = p.eval.config_hash;
      throw LaneLost("GPU 1: its worker could not be started again");
    }
    return ReplayEvaluator::measure(p, lane);
  }
  std::string lost_on;  // written before the throw, read after the run

 private:
  std::atomic<int> second_{0};
};

// A GPU lost while it holds a candidate queued: that one and the one it was measuring go to the
// other GPU; the run records its budget, each configuration once.
TEST(Pipeline, AGpuLostWithACandidateQueuedHandsBothToAnotherAndTheRunRecordsItsBudget) {
  test::TempDir dir;
  LosesItsSecondGpu ev(kLandscape, ReplayCost{0.001, 0.02, 4, 2});
  Store store(dir.path / "evo.db");
  const RunSummary s = sweep(ev, store, 30);
  EXPECT_EQ(s.new_evaluations, 30);
  std::set<std::string> seen;
  std::size_t rows = 0;
  for (const auto& r : store.evaluations_of_run(s.run_id)) seen.insert(r.eval.config_hash), ++rows;
  EXPECT_EQ(rows, 30u);
  EXPECT_EQ(seen.size(), 30u) << "each configuration once";
  EXPECT_TRUE(seen.count(ev.lost_on)) << "the candidate the lost GPU was measuring was measured on the other";
}

// A space with a few very long compiles: one compile (1 s) longer than the bound, the others 0.01 s
// (tests/slow_compile_landscape.h).
struct LongCompileRun {
  RunSummary summary;
  double wall_s = 0;
  bool long_one_recorded = false;
};

// A replay whose candidates cannot be dropped for nothing, as a work queue's on other hosts.
class UndroppableReplay : public ReplayEvaluator {
 public:
  using ReplayEvaluator::ReplayEvaluator;
  bool can_drop_unfinished() const override { return false; }
};

LongCompileRun run_with_one_long_compile(bool droppable, std::size_t gpus = 1) {
  test::TempDir dir;
  const auto [path, first] = test::write_slow_compile_landscape(test::source_root(), dir.path, 1.0, 0.01);
  const ReplayCost cost{-1, 0.001, 4, gpus};
  std::unique_ptr<ReplayEvaluator> ev = droppable ? std::make_unique<ReplayEvaluator>(path, cost)
                                                  : std::make_unique<UndroppableReplay>(path, cost);
  Store store(dir.path / "evo.db");
  const auto t0 = std::chrono::steady_clock::now();
  LongCompileRun r;
  r.summary = sweep(*ev, store, 40);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto& row : store.evaluations_of_run(r.summary.run_id)) r.long_one_recorded |= row.eval.config_hash == first;
  EXPECT_EQ(r.summary.new_evaluations, 40) << "the budget, exactly";
  return r;
}

// Where candidates cannot be dropped, one compile longer than the bound holds a short run however
// the pool is scheduled. The summary keeps the longest compile, and the pipeline line says it.
TEST(Pipeline, OneLongCompileIsAFloorTheSummaryNamesWhereCandidatesCannotBeDropped) {
  const LongCompileRun r = run_with_one_long_compile(false);
  EXPECT_TRUE(r.long_one_recorded);
  EXPECT_DOUBLE_EQ(r.summary.longest_compile_s, 1.0);
  EXPECT_LT(r.summary.bound_s(), 0.5) << "the compile seconds over the workers do not see it";
  EXPECT_GE(r.wall_s, 1.0) << "no schedule finishes before its longest compile";
  EXPECT_LE(r.wall_s, 1.5) << "the other candidates compile and measure beside it";
  EXPECT_EQ(r.summary.dropped_at_end, 0u);
  EXPECT_EQ(r.summary.seconds_compile_dropped, 0.0);
}

// Where they can (this host's compile pool), the idle workers compile extra candidates while the
// long one runs, the budget is met by whichever finish first, and the long one is dropped, said.
TEST(Pipeline, AtTheBudgetsEndIdleWorkersCompileExtrasSoOneLongCompileNoLongerHoldsTheRun) {
  const LongCompileRun r = run_with_one_long_compile(true);
  EXPECT_FALSE(r.long_one_recorded) << "still compiling when the budget was spent: dropped";
  EXPECT_LT(r.summary.longest_compile_s, 1.0);
  EXPECT_LT(r.wall_s, 0.6) << "before the extras, no run finished before the 1 s compile";
  EXPECT_GE(r.summary.dropped_at_end, 1u) << "the long one at least";
  EXPECT_GT(r.summary.seconds_compile_dropped, 0.1) << "the long one's compile seconds until it was stopped";
  EXPECT_LT(r.summary.seconds_compile_dropped, 4 * r.wall_s) << "no more than the workers had";
  // With several GPUs a result can come back while another GPU measures an extra: the budget is
  // still met exactly (run_with_one_long_compile checks it), nothing measured beyond it.
  const LongCompileRun two = run_with_one_long_compile(true, 2);
  EXPECT_FALSE(two.long_one_recorded);
  EXPECT_LT(two.wall_s, 0.6);
}

// A replay answers a compile past `--compile-timeout` as the compile pool would: stopped at the
// limit, a compile error saying so; the run does not wait for the rest of it.
TEST(Pipeline, AReplayedCompilePastTheTimeLimitIsStoppedThereAndRecordedSaying) {
  test::TempDir dir;
  const auto [path, first] = test::write_slow_compile_landscape(test::source_root(), dir.path, 1.0, 0.01);
  ReplayCost cost{-1, 0.001, 4, 1};
  cost.compile_timeout_s = 0.3;
  UndroppableReplay ev(path, cost);
  Store store(dir.path / "evo.db");
  const auto t0 = std::chrono::steady_clock::now();
  const RunSummary s = sweep(ev, store, 40);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(s.new_evaluations, 40);
  bool seen = false;
  for (const auto& row : store.evaluations_of_run(s.run_id))
    if (row.eval.config_hash == first) {
      seen = true;
      EXPECT_EQ(row.eval.status, Status::CompileError);
      EXPECT_EQ(row.eval.message,
                "compile error: compile stopped after 0.3 s: over the compile time limit of 0.3 s (--compile-timeout)");
      EXPECT_DOUBLE_EQ(row.eval.seconds_compile, 0.3);
    }
  EXPECT_TRUE(seen) << "the long compile is recorded, stopped at the limit";
  EXPECT_DOUBLE_EQ(s.longest_compile_s, 0.3);
  EXPECT_LT(wall, 0.9) << "not held by the 1 s compile";
}

// A replay that simulates its compile workers says which candidates they are compiling and for how
// long (a lower bound on their compile seconds, which exhaustive's scheduled sweep learns from), and
// drops them on request with the seconds they had spent.
TEST(Pipeline, ASimulatedPoolSaysWhatItIsCompilingAndForHowLongAndDropsIt) {
  test::TempDir dir;
  const auto [path, slow] = test::write_slow_compile_landscape(test::source_root(), dir.path, 0.4, 0.4);
  ReplayEvaluator ev(path, ReplayCost{-1, 0.001, 1});
  KnobSpace space(ev.profile());
  const auto configs = space.enumerate_valid();
  ev.submit({configs[0], Origin{"exhaustive", "", {}}});
  ev.submit({configs[1], Origin{"exhaustive", "", {}}});  // waits: one simulated worker
  EXPECT_TRUE(ev.collect(0.15).empty());
  const auto compiling = ev.still_compiling();
  ASSERT_EQ(compiling.size(), 1u) << "the one a worker has; not the one waiting";
  EXPECT_EQ(compiling[0].first, configs[0]);
  EXPECT_GE(compiling[0].second, 0.14);
  EXPECT_LT(compiling[0].second, 0.4);
  const double spent = ev.drop_unfinished();
  EXPECT_NEAR(spent, compiling[0].second, 0.05);
  EXPECT_TRUE(ev.still_compiling().empty());
  EXPECT_TRUE(ev.collect(0.5).empty()) << "nothing dropped comes back";
}

TEST(Pipeline, InstantReplayIsTheSameRunEveryTime) {
  const PipelineRun a = run_with_cost({}, 60), b = run_with_cost({}, 60);
  ASSERT_TRUE(a.summary.best && b.summary.best);
  EXPECT_EQ(a.summary.best->config, b.summary.best->config);
  EXPECT_EQ(a.summary.measured, b.summary.measured);
  EXPECT_EQ(a.max_pending, 1u) << "a replay that costs nothing proposes one at a time";
}

// Results of a pipelined run arrive in the order the GPU finishes them, so a strategy asked again
// would not propose the same sequence: a repeat of a finished run reproduces it from the database.
TEST(Pipeline, RepeatOfAFinishedPipelinedRunReadsItAllBackWithoutMeasuring) {
  test::TempDir dir;
  Store store(dir.path / "evo.db");
  ReplayEvaluator ev(kLandscape, ReplayCost{0.005, 0.002, 4});
  KnobSpace space(ev.profile());
  RunOptions o;
  o.strategy = "evo";
  o.budget = 60;
  o.sanitize_elites = false;
  StrategyContext ctx{ev.profile(), space, 11, {}, "", "", {}};
  auto first = make_strategy("evo", ctx);
  const RunSummary a = run_search(ev.profile(), *first, ev, store, o);
  ASSERT_EQ(a.new_evaluations, 60);
  auto again = make_strategy("evo", ctx);
  o.repeat_of = a.run_id;
  const auto t0 = std::chrono::steady_clock::now();
  const RunSummary b = run_search(ev.profile(), *again, ev, store, o);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(b.new_evaluations, 0);
  EXPECT_EQ(b.evaluations, 60);
  EXPECT_EQ(b.seconds_gpu, 0) << "nothing measured";
  EXPECT_LT(wall, 0.5 * 60 * 0.002 + 0.5) << "read back, not re-simulated";
  ASSERT_TRUE(a.best && b.best);
  EXPECT_EQ(a.best->config, b.best->config);
  EXPECT_EQ(b.baseline_p50_us, a.baseline_p50_us);
  const auto ra = store.evaluations_of_run(a.run_id), rb = store.evaluations_of_run(b.run_id);
  ASSERT_EQ(ra.size(), rb.size());
  for (std::size_t i = 0; i < ra.size(); ++i) EXPECT_EQ(ra[i].eval.config_hash, rb[i].eval.config_hash) << i;
}

}  // namespace
}  // namespace evo
