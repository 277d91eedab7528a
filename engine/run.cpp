// The run loop (engine/run.h). Lettered steps match the header.
#include "engine/run.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <unordered_set>

#include "engine/error.h"

namespace evo {
namespace {

using Clock = std::chrono::steady_clock;

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

std::string duration_text(double s) {
  if (s < 90) return fmt("%.0fs", s);
  if (s < 5400) return fmt("%.0fm", s / 60);
  return fmt("%.1fh", s / 3600);
}

class Loop {
 public:
  Loop(const Profile& profile, Strategy& strategy, Evaluator& evaluator, Store& store, const RunOptions& o)
      : profile_(profile), strategy_(strategy), ev_(evaluator), store_(store), o_(o), start_(Clock::now()) {}

  RunSummary run() {
    // A. Begin, or reopen and re-observe: the strategy sees what the run recorded, in order.
    if (o_.resume) {
      s_.run_id = *o_.resume;
      store_.set_run_status(s_.run_id, "running");
      for (const auto& r : store_.evaluations_of_run(s_.run_id)) {
        recorded_.insert(r.eval.config_hash);
        count(r.id, r.eval, r.reused);
        strategy_.observe(r.eval);
      }
      if (auto info = store_.run(s_.run_id)) s_.baseline_p50_us = info->baseline_p50_us;
      spdlog::info("run {}: resumed with {} evaluations recorded ({} new of budget {})", s_.run_id, s_.evaluations,
                   s_.new_evaluations, o_.budget);
    } else {
      RunInfo info;
      info.profile = profile_.name;
      info.profile_path = o_.profile_path.empty() ? profile_.path.string() : o_.profile_path;
      info.strategy = o_.strategy;
      info.device = ev_.device();
      info.driver = ev_.driver();
      info.arch = o_.arch.empty() ? profile_.arch : o_.arch;
      info.budget = o_.budget;
      info.seed = o_.seed;
      info.options_json = o_.options_json;
      s_.run_id = store_.begin_run(info);
    }
    new_at_start_ = s_.new_evaluations;
    try {
      search();
    } catch (...) {
      end_progress();
      store_.set_run_status(s_.run_id, "failed");
      throw;
    }
    end_progress();
    // E. Interrupted runs stay resumable; everything else is finished.
    s_.status = s_.stop_reason == "interrupted" ? "interrupted" : "finished";
    store_.set_run_status(s_.run_id, s_.status);
    s_.seconds = seconds();
    return s_;
  }

 private:
  void search() {
    // B. The baseline first (read back when the database has it), then re-timed in this run.
    Config base(profile_.baseline.begin(), profile_.baseline.end());
    if (!stopping() && !recorded_.count(config_hash(base))) process({base, Origin{"baseline", "", {}}});
    if (!stopping()) {
      Timing t = ev_.time_baseline();
      if (t.outcome == Outcome::Passed && t.p50_us > 0)
        s_.baseline_p50_us = t.p50_us;
      else
        spdlog::warn("baseline could not be re-timed ({}): speedups use its recorded median", t.reason);
      if (s_.baseline_p50_us > 0) store_.set_run_baseline(s_.run_id, s_.baseline_p50_us);
    }
    // C. Generations until the budget, the time limit, Ctrl-C or the strategy ends it.
    while (!stopping()) {
      const auto left = static_cast<std::size_t>(o_.budget - spent());
      std::vector<Candidate> gen = strategy_.propose(std::min(std::max<std::size_t>(o_.batch, 1), left));
      if (gen.empty()) {
        s_.stop_reason = "space exhausted";
        break;
      }
      ++generation_;
      // Compile ahead what will really be evaluated while the first candidates are measured.
      std::vector<Config> ahead;
      for (const auto& c : gen)
        if (!store_.lookup(key_of(c.config), config_hash(c.config))) ahead.push_back(c.config);
      if (!ahead.empty()) ev_.prefetch(ahead);
      for (const auto& c : gen) {
        if (stopping()) break;  // the rest of the generation is dropped; a resume proposes anew
        process(c);
      }
      if (!o_.progress)
        spdlog::info("generation {}: {}/{} new, {} read back, valid {}%, best {}", generation_, s_.new_evaluations,
                     o_.budget, s_.evaluations - s_.new_evaluations, valid_pct(), best_text());
    }
  }

  // One candidate: read back or evaluate, then record (one transaction) and observe.
  void process(const Candidate& c) {
    const std::string hash = config_hash(c.config);
    if (!recorded_.insert(hash).second) return;  // the run has it already: never twice
    const EvalKey key = key_of(c.config);
    Evaluation e;
    bool reused = false;
    if (auto old = store_.lookup(key, hash)) {
      e = old->eval;
      e.origin = c.origin;  // how this run came to it: the lineage is the run's
      reused = true;
    } else {
      e = ev_.evaluate(c);
      e.config = c.config;
      e.config_hash = hash;
      e.origin = c.origin;
      s_.seconds_compile += e.seconds_compile;
      s_.seconds_green += e.seconds_green;
      s_.seconds_fast += e.seconds_fast;
      s_.seconds_metrics += e.seconds_metrics;
    }
    const double base = e.origin.kind == "baseline" && s_.baseline_p50_us <= 0 ? e.fast.p50_us : s_.baseline_p50_us;
    e.speedup = e.measured() && e.fast.p50_us > 0 && base > 0 ? base / e.fast.p50_us : 0;
    // D. A new fastest candidate must also pass compute-sanitizer before it is reported.
    if (o_.sanitize_elites && is_new_best(e) && e.sanitize.outcome == Outcome::Skipped) {
      e.sanitize = ev_.sanitize(c);
      if (e.sanitize.outcome == Outcome::Rejected || e.sanitize.outcome == Outcome::Crashed ||
          e.sanitize.outcome == Outcome::Timeout) {
        e.status = Status::SanitizeFailed;
        e.message = "compute-sanitizer: " + std::to_string(e.sanitize.errors) + " errors: " + e.sanitize.first_message;
      }
    }
    const std::int64_t id = store_.record(s_.run_id, key, e, reused);
    const bool best = is_new_best(e);
    count(id, e, reused);
    strategy_.observe(e);
    if (best) {
      if (o_.progress) end_progress();
      spdlog::info("new best #{}: {} us ({}x baseline) {} [{}{}]", id, fmt("%.2f", e.fast.p50_us),
                   fmt("%.2f", e.speedup), config_text(e.config), e.origin.kind,
                   e.origin.rule.empty() ? "" : ":" + e.origin.rule);
    }
    if (o_.progress) draw_progress();
  }

  bool is_new_best(const Evaluation& e) const {
    return e.measured() && e.fast.p50_us > 0 && (!s_.best || e.fast.p50_us < s_.best->fast.p50_us);
  }

  void count(std::int64_t id, const Evaluation& e, bool reused) {
    ++s_.evaluations;
    if (!reused) ++s_.new_evaluations;
    if (e.measured()) {
      ++s_.measured;
      if (!s_.best || e.fast.p50_us < s_.best->fast.p50_us) {
        s_.best = e, s_.best_id = id;
        if (o_.metrics_near_best > 0) ev_.set_metrics_max_p50_us(o_.metrics_near_best * e.fast.p50_us);
      }
    }
  }

  EvalKey key_of(const Config& c) const {
    return {profile_.name, ev_.build_key(c), ev_.device(), profile_.objective_problem().name};
  }

  bool stopping() {
    if (!s_.stop_reason.empty()) return true;
    if (o_.stop && o_.stop->load())
      s_.stop_reason = "interrupted";
    else if (spent() >= o_.budget)
      s_.stop_reason = o_.repeat_of ? "repeat of run " + std::to_string(*o_.repeat_of) + " read back" : "budget spent";
    else if (o_.time_limit_s > 0 && seconds() >= o_.time_limit_s)
      s_.stop_reason = "time limit";
    return !s_.stop_reason.empty();
  }

  // What the budget is charged with: new evaluations, or every candidate when this run repeats an
  // identical finished one (it then reproduces that run from the database instead of going past it).
  std::int64_t spent() const { return o_.repeat_of ? s_.evaluations : s_.new_evaluations; }

  double seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  std::string valid_pct() const { return s_.evaluations ? fmt("%.0f", 100.0 * s_.measured / s_.evaluations) : "0"; }
  std::string best_text() const {
    if (!s_.best) return "none yet";
    return fmt("%.2f us", s_.best->fast.p50_us) +
           (s_.best->speedup > 0 ? fmt(" (%.2fx)", s_.best->speedup) : std::string());
  }

  void draw_progress() {
    const double el = seconds();
    const std::int64_t done = s_.new_evaluations - new_at_start_;
    const std::int64_t left = o_.budget - spent();
    std::string eta = done > 0 && left > 0 ? duration_text(el / done * left) : "-";
    std::fprintf(stderr, "\r\x1b[Kgen %d | %lld/%lld new | valid %s%% | best %s | ETA %s", generation_,
                 static_cast<long long>(s_.new_evaluations), static_cast<long long>(o_.budget), valid_pct().c_str(),
                 best_text().c_str(), eta.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }
  void end_progress() {
    if (drawn_) std::fputs("\n", stderr);
    drawn_ = false;
  }

  const Profile& profile_;
  Strategy& strategy_;
  Evaluator& ev_;
  Store& store_;
  const RunOptions& o_;
  Clock::time_point start_;
  RunSummary s_;
  std::unordered_set<std::string> recorded_;  // config hashes this run holds
  int generation_ = 0;
  std::int64_t new_at_start_ = 0;
  bool drawn_ = false;
};

}  // namespace

RunSummary run_search(const Profile& profile, Strategy& strategy, Evaluator& evaluator, Store& store,
                      const RunOptions& options) {
  if (options.budget <= 0)
    throw UserError("--budget " + std::to_string(options.budget) + ": must be at least 1 new evaluation");
  return Loop(profile, strategy, evaluator, store, options).run();
}

}  // namespace evo
