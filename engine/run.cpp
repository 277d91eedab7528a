// The run loop (engine/run.h). Lettered steps match the header.
#include "engine/run.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_set>

#include "engine/error.h"
#include "engine/trace.h"

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

// How long the loop sleeps in the compile pool while the GPU works: short enough that a finished
// measurement is recorded and the next candidate started at once, long enough to cost nothing.
constexpr double kPollWhileMeasuring_s = 0.002;
// ... and while only compiles are under way (the stop flag and the time limit are read between).
constexpr double kPollWhileCompiling_s = 0.1;
// With nothing compiling, the loop sleeps until a GPU finishes (each lane's thread wakes it), this
// long at most. It used to spin through the pool's empty collect(), taking a core from the
// workers and, on a busy host, delaying the lane threads' own wake-ups by milliseconds.
constexpr double kWaitForAGpu_s = 0.1;
// The best is checked by compute-sanitizer before it is reported; when it fails, the next best,
// this many times at most.
constexpr int kSanitizeTries = 5;

class Loop {
 public:
  Loop(const Profile& profile, Strategy& strategy, Evaluator& evaluator, Store& store, const RunOptions& o)
      : profile_(profile), setup_(o.setup.empty() ? measurement_setup(profile) : o.setup), strategy_(strategy), ev_(evaluator), store_(store), o_(o),
        start_(Clock::now()) {
    s_.compile_slots = std::max<std::size_t>(1, ev_.compile_slots());
    lanes_.resize(std::max<std::size_t>(1, ev_.lanes()));
    s_.gpus = lanes_.size();
    ahead_ = o_.ahead > 0               ? o_.ahead
             : ev_.measures_instantly() ? 1
                                        : 2 * s_.compile_slots + lanes_.size();
  }

  RunSummary run() {
    std::optional<TraceSpan> begun(std::in_place, "run begun: database, strategy", "coordinator");
    // A. Begin, or reopen and re-observe: the strategy sees what the run recorded, in order.
    if (o_.resume) {
      s_.run_id = *o_.resume;
      store_.set_run_status(s_.run_id, "running");
      for (const auto& r : store_.evaluations_of_run(s_.run_id)) {
        recorded_.insert(r.eval.config_hash);
        count(r.id, r.eval, r.reused);
        if (r.eval.measured()) measured_.push_back({r.id, Candidate{r.eval.config, r.eval.origin}, r.eval});
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
      info.id = o_.run_id.value_or(0);
      s_.run_id = store_.begin_run(info);
    }
    new_at_start_ = s_.new_evaluations;
    defer_metrics_ = !strategy_.reads_metrics() && o_.metrics_near_best > 0 && o_.metrics_best_at_end > 0 &&
                     profile_.gates.metrics.thresholds.empty();
    if (defer_metrics_) ev_.set_metrics_during_run(false);
    begun.reset();
    try {
      pipeline();
      if (o_.sanitize_elites && s_.stop_reason != "interrupted") check_best();
      if (defer_metrics_ && s_.stop_reason != "interrupted") profile_the_best();
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
  struct Measure {                             // a candidate for a lane
    Prepared p;
    bool retime_first = false;                 // the baseline re-timed on the lane before it (B)
    std::size_t lane = 0;
  };
  struct LaneResult {                          // a candidate measured, for the loop to record
    Prepared p;
    Evaluation e;
    std::exception_ptr failed;                 // the evaluator threw (LaneLost: the device is gone)
    std::optional<Timing> retime;              // the baseline's re-timing before it
    double seconds = 0;                        // on the GPU, that re-timing included
  };
  struct Lane {                                // one device measuring
    // Shared with the lane's thread, under lanes_m_:
    bool running = false;                      // its thread is measuring (the current, then the queued)
    std::string current_hash;                  // what it measures now
    std::optional<Measure> queued;             // started by its thread as the current ends
    std::deque<LaneResult> done;               // measured, not yet recorded
    // The loop's:
    Clock::time_point began;                   // when its thread was last started
    double baseline_p50_us = 0;                // as re-timed on it in this run
    bool lost = false;                         // dropped: its worker cannot be started again
    bool retimed = false;                      // the baseline timed on it since it was recorded (or due)
    std::future<void> thread;                  // the thread measuring on it; last: destroyed (joined) first
  };

  void pipeline() {
    // A repeat of an identical finished run reproduces it from the database, in its order, with
    // its baseline: nothing is proposed, compiled or measured (proposals made while results were
    // pending depend on the order the GPU finished them, so asking the strategy again would not).
    if (o_.repeat_of) {
      if (auto info = store_.run(*o_.repeat_of)) s_.baseline_p50_us = info->baseline_p50_us;
      if (s_.baseline_p50_us > 0) store_.set_run_baseline(s_.run_id, s_.baseline_p50_us);
      for (const auto& r : store_.evaluations_of_run(*o_.repeat_of)) {
        if (stopping()) break;
        if (recorded_.count(r.eval.config_hash)) continue;
        finish(Candidate{r.eval.config, r.eval.origin}, r.eval, true);
      }
      if (!stopping()) s_.stop_reason = "repeat of run " + std::to_string(*o_.repeat_of) + " read back";
      return;
    }
    // B. The baseline goes first (read back when the database has it) and onto the first free GPU.
    baseline_hash_ = config_hash(Config(profile_.baseline.begin(), profile_.baseline.end()));
    if (!recorded_.count(baseline_hash_))
      admit({Config(profile_.baseline.begin(), profile_.baseline.end()), Origin{"baseline", "", {}}});
    else
      baseline_recorded();  // a resumed run recorded it before

    // C. Keep `ahead` candidates in flight; the GPU takes whichever is ready.
    for (;;) {
      if (!stopping()) top_up();
      if (stopping()) {
        ready_.clear();  // dropped, not recorded: a resume proposes anew (their builds stay cached)
        {
          std::lock_guard<std::mutex> lock(lanes_m_);
          for (auto& l : lanes_) l.queued.reset();  // as ready_: not started, dropped
        }
        for (std::size_t i = 0; i < lanes_.size(); ++i) {  // Ctrl-C finishes the candidates on the GPUs
          if (lanes_[i].thread.valid()) lanes_[i].thread.wait();
          finish_measurement(i);
        }
        s_.dropped_at_end = in_flight_.size();
        in_flight_.clear();
        s_.seconds_compile_dropped = ev_.drop_unfinished();  // their compiles stopped: none comes back later
        break;
      }
      start_measurements();
      if (in_flight_.empty()) {
        if (s_.stop_reason.empty()) s_.stop_reason = "space exhausted";
        break;
      }
      if (measuring() && compiling() == 0) wait_for_a_gpu(kWaitForAGpu_s);
      const double wait = measuring() ? kPollWhileMeasuring_s : kPollWhileCompiling_s;
      for (auto& p : ev_.collect(compiling() == 0 ? 0 : wait)) {
        if (!p.needs_gpu && beyond_budget(p.eval.config_hash)) {
          in_flight_.erase(p.eval.config_hash);  // an extra the budget has no room for (below)
        } else if (!p.needs_gpu) {
          record(p.candidate, std::move(p.eval), 0);
        } else if (ev_.measures_instantly()) {
          Evaluation e = ev_.measure(p, 0);
          record(p.candidate, std::move(e), 0);
        } else {
          ready_.push_back(std::move(p));
        }
      }
      start_measurements();  // what just became ready, onto a free GPU before the next top-up
      for (std::size_t i = 0; i < lanes_.size(); ++i) finish_measurement(i);
    }
  }

  // Evaluations the run will record without another candidate: recorded, on a GPU, measured and
  // held for the baseline, and the baseline itself until it is recorded (it always is).
  std::int64_t committed() const {
    std::int64_t n = spent() + static_cast<std::int64_t>(held_.size() + finishing_ + on_gpus());
    if (!baseline_done_ && !baseline_on_gpu() && in_flight_.count(baseline_hash_)) ++n;
    return n;
  }
  // An extra candidate (top_up, the budget's end) that the budget has no room for: not measured,
  // not recorded. The baseline is counted in committed() already.
  bool beyond_budget(const std::string& hash) const {
    return speculate_ && hash != baseline_hash_ && committed() >= o_.budget;
  }

  bool measuring() const { return on_gpus() > 0; }

  // Candidates the lanes hold: measuring, queued behind that, measured and not yet taken back.
  std::size_t on_gpus() const {
    std::lock_guard<std::mutex> lock(lanes_m_);
    std::size_t n = 0;
    for (const auto& l : lanes_) n += l.running + (l.queued ? 1 : 0) + l.done.size();
    return n;
  }
  bool baseline_on_gpu() const {
    std::lock_guard<std::mutex> lock(lanes_m_);
    for (const auto& l : lanes_) {
      if (l.current_hash == baseline_hash_ || (l.queued && l.queued->p.eval.config_hash == baseline_hash_)) return true;
      for (const auto& r : l.done)
        if (r.p.eval.config_hash == baseline_hash_) return true;
    }
    return false;
  }

  // Candidates in the evaluator's CPU stages: in flight, and neither ready, on a GPU nor held.
  std::size_t compiling() const {
    const std::size_t elsewhere = ready_.size() + held_.size() + finishing_ + on_gpus();
    return in_flight_.size() > elsewhere ? in_flight_.size() - elsewhere : 0;
  }

  // Sleeps until a lane's measurement ends (or timeout_s): the lane's thread counts it in `gpu_done_`.
  void wait_for_a_gpu(double timeout_s) {
    std::unique_lock<std::mutex> lock(done_m_);
    done_cv_.wait_for(lock, std::chrono::duration<double>(timeout_s), [&] { return gpu_done_ != gpu_seen_; });
    gpu_seen_ = gpu_done_;
  }
  void gpu_finished() {
    {
      std::lock_guard<std::mutex> lock(done_m_);
      ++gpu_done_;
    }
    done_cv_.notify_all();
  }

  // Ask the strategy for enough proposals to keep `ahead` in flight, within the budget. An empty
  // answer while candidates are in flight means "wait for their results"; with none, the space is
  // spent.
  // The first call asks for enough to start every GPU, no more: admitting the whole `ahead`
  // (132 on 4 GPUs of a 64-core host; a database lookup, a compile key and a cache read each) held
  // the first candidate back 23-60 ms (docs/results/scale12). The rest come once the GPUs measure.
  //
  // The budget's end. Once every evaluation the budget has room for is in flight, the GPUs can
  // be left waiting on one long compile (Kernel Tuner's convolution: 4 s at the median, up to 50 s
  // with a large filter unrolled) while the other compile workers idle. Where the evaluator can
  // drop unfinished candidates for nothing, the loop then keeps those workers busy with extra
  // candidates, the budget's last evaluations are whichever finish first, and what is still
  // compiling when the budget is spent is dropped (not recorded; a later run proposes it anew).
  // The extras start only while no candidate is ready for a GPU, so a run whose GPUs are the
  // bottleneck proposes none; and none is measured or recorded beyond the budget
  // (beyond_budget), so a run records exactly its budget as before.
  void top_up() {
    const std::size_t target = first_top_up_ ? std::min(ahead_, 2 * lanes_.size()) : ahead_;
    first_top_up_ = false;
    while (!stopping()) {
      std::int64_t room = o_.budget - spent() - static_cast<std::int64_t>(in_flight_.size());
      if (room <= 0 && speculate_ && ready_.empty() && committed() < o_.budget && compiling() < s_.compile_slots)
        room = static_cast<std::int64_t>(s_.compile_slots - compiling());
      // A strategy that learns nothing from results (a scheduled sweep) keeps the compile workers
      // fed however many compiled candidates wait for a GPU.
      const std::size_t flying = strategy_.ready_counts_ahead() ? in_flight_.size() : compiling();
      const std::size_t want = std::min<std::size_t>(target - std::min(target, flying),
                                                     static_cast<std::size_t>(std::max<std::int64_t>(room, 0)));
      if (want == 0) return;
      if (strategy_.reads_compiling()) strategy_.observe_compiling(ev_.still_compiling());
      std::vector<Candidate> more = strategy_.propose(want);
      if (more.empty()) return;
      for (auto& c : more) admit(std::move(c));
    }
  }

  // A proposal: read back at once when the database has it, else into the evaluator's CPU stages.
  void admit(Candidate c) {
    const std::string hash = config_hash(c.config);
    if (recorded_.count(hash) || in_flight_.count(hash)) return;  // the run has it already: never twice
    if (auto old = store_.lookup(key_of(c.config), hash)) {
      Evaluation e = old->eval;
      e.origin = c.origin;  // how this run came to it: the lineage is the run's
      finish(c, std::move(e), true);
      return;
    }
    in_flight_.insert(hash);
    ev_.submit(c);
  }

  // Each free GPU takes the oldest ready candidate, the baseline before any other; a free GPU with
  // nothing ready takes what another holds queued. Then each busy GPU holds the next ready one
  // queued, which its thread starts the moment the current ends: a lane no longer waits for the
  // loop to wake, record and choose between two candidates (0.16-0.48 ms a job, and 5-30 ms when
  // the loop was busy elsewhere: re-timing the baseline on another GPU, a database checkpoint; 4
  // GPUs of gemm_fp16 idled 5.5 % between jobs, docs/results/scale13). Once the baseline is
  // recorded, a GPU re-times it before its next candidate, on its own thread (B).
  void start_measurements() {
    for (std::size_t i = 0; i < lanes_.size(); ++i) {
      if (lanes_[i].lost || !lane_free(i)) continue;
      std::optional<Measure> next = next_ready(i);
      if (!next) next = take_queued_elsewhere(i);
      if (!next) continue;
      launch(i, std::move(*next));
    }
    if (ev_.measures_instantly() || ready_.empty()) return;
    // Queued behind the current, the lane whose current began first first.
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < lanes_.size(); ++i)
      if (!lanes_[i].lost) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return lanes_[a].began < lanes_[b].began; });
    for (std::size_t i : order) {
      {
        std::lock_guard<std::mutex> lock(lanes_m_);
        if (lanes_[i].queued) continue;
      }
      std::optional<Measure> next = next_ready(i);
      if (!next) return;
      std::unique_lock<std::mutex> lock(lanes_m_);
      if (lanes_[i].running) {
        lanes_[i].queued = std::move(next);
      } else if (lanes_[i].done.empty()) {  // its current ended meanwhile: started now
        lock.unlock();
        launch(i, std::move(*next));
      } else {  // ended, with results to take first: back where it was
        lock.unlock();
        if (next->retime_first) lanes_[i].retimed = false;
        ready_.push_front(std::move(next->p));
        return;
      }
    }
  }

  bool lane_running(std::size_t i) const {
    std::lock_guard<std::mutex> lock(lanes_m_);
    return lanes_[i].running;
  }
  // Neither measuring nor holding results the loop has not taken (a failure among them may mean
  // its device is gone: finish_measurement decides before the lane starts again).
  bool lane_free(std::size_t i) const {
    std::lock_guard<std::mutex> lock(lanes_m_);
    return !lanes_[i].running && lanes_[i].done.empty();
  }

  // The oldest ready candidate, the baseline before any other, for lane i; none while the budget
  // may yet need the room (beyond_budget). Marks the lane's re-timing when it is due.
  std::optional<Measure> next_ready(std::size_t i) {
    if (ready_.empty()) return std::nullopt;
    auto next = ready_.begin();
    for (auto it = ready_.begin(); it != ready_.end(); ++it)
      if (it->eval.config_hash == baseline_hash_) next = it;
    if (beyond_budget(next->eval.config_hash)) return std::nullopt;  // waits: the budget may yet need it
    Measure m{std::move(*next), false, i};
    ready_.erase(next);
    m.retime_first = retime_due(i);
    return m;
  }

  // A queued candidate not yet started on another lane, for a free lane i with nothing ready.
  std::optional<Measure> take_queued_elsewhere(std::size_t i) {
    std::optional<Measure> got;
    {
      std::lock_guard<std::mutex> lock(lanes_m_);
      for (auto& l : lanes_)
        if (l.queued) {
          got = std::move(l.queued);
          l.queued.reset();
          break;
        }
    }
    if (got) {
      if (got->retime_first) lanes_[got->lane].retimed = false;  // that lane re-times before its next instead
      got->lane = i;
      got->retime_first = retime_due(i);
    }
    return got;
  }

  bool retime_due(std::size_t i) {
    if (!baseline_done_ || lanes_[i].retimed || stopping()) return false;
    lanes_[i].retimed = true;
    return true;
  }

  // Lane i's thread: measures m, then whatever is queued behind it, until nothing is (or a
  // measurement fails: the loop then decides, a lost worker's queued candidate going elsewhere).
  void launch(std::size_t i, Measure m) {
    m.lane = i;
    {
      std::lock_guard<std::mutex> lock(lanes_m_);
      lanes_[i].running = true;
      lanes_[i].current_hash = m.p.eval.config_hash;
    }
    lanes_[i].began = Clock::now();
    lanes_[i].thread = std::async(std::launch::async, [this, i, m = std::move(m)]() mutable {
      for (;;) {
        LaneResult r;
        r.p = std::move(m.p);
        const auto t0 = Clock::now();
        try {
          if (m.retime_first) {
            TraceSpan span("the baseline re-timed on lane " + std::to_string(i), "lane " + std::to_string(i));
            r.retime = ev_.time_baseline(i);
          }
          // The span ends before the result is handed over: the trace must not show this lane's
          // next measurement overlapping it.
          TraceSpan span("measure", "lane " + std::to_string(i));
          r.e = ev_.measure(r.p, i);
        } catch (...) {
          r.failed = std::current_exception();
        }
        r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        bool more = false;
        {
          std::lock_guard<std::mutex> lock(lanes_m_);
          Lane& lane = lanes_[i];
          more = !r.failed && lane.queued.has_value();
          lane.done.push_back(std::move(r));
          if (more) {
            m = std::move(*lane.queued);
            lane.queued.reset();
            lane.current_hash = m.p.eval.config_hash;
          } else {
            lane.running = false;
            lane.current_hash.clear();
          }
        }
        gpu_finished();
        if (!more) return;
      }
    });
  }

  // Lane i's results: the next candidate goes onto that GPU before each is recorded and the
  // strategy asked for more, so the device never waits on the database or the strategy. A device
  // that can no longer measure is dropped with one line; its candidates go to another.
  void finish_measurement(std::size_t i) {
    Lane& lane = lanes_[i];
    std::deque<LaneResult> got;
    {
      std::lock_guard<std::mutex> lock(lanes_m_);
      got.swap(lane.done);
    }
    finishing_ += got.size();  // still to be recorded: the budget counts them (committed)
    for (auto& r : got) {
      if (r.failed) {
        try {
          std::rethrow_exception(r.failed);  // the evaluator's UserError (a broken environment) stops the run
        } catch (const LaneLost& lost) {
          --finishing_;
          if (!drop_lane(i, lost)) throw;
          std::lock_guard<std::mutex> lock(lanes_m_);
          if (lane.queued) ready_.push_front(std::move(lane.queued->p)), lane.queued.reset();
          ready_.push_front(std::move(r.p));
          continue;
        }
      }
      if (r.retime) retimed(i, *r.retime);
      if (!ev_.measures_instantly()) s_.seconds_gpu += r.seconds;
      if (!stopping()) start_measurements();
      --finishing_;
      record(r.p.candidate, std::move(r.e), i);
    }
  }

  // A device whose worker cannot be started again: dropped with one line. False when it was the
  // last (the caller rethrows: the run cannot go on).
  bool drop_lane(std::size_t i, const LaneLost& lost) {
    lanes_[i].lost = true;
    const auto left = std::count_if(lanes_.begin(), lanes_.end(), [](const Lane& l) { return !l.lost; });
    if (left == 0) return false;
    spdlog::warn("{}: dropped, the run goes on with {} GPU{}", lost.what(), left, left == 1 ? "" : "s");
    return true;
  }

  // B. The baseline re-timed in this run on every device but the one that measured it (each
  // while it is free), so speedups are ratios measured side by side on one device. Results that
  // came back before the baseline's own were held (nothing to divide by yet) and are recorded now,
  // after the free devices' re-timings, which run side by side (a lane busy now re-times before
  // its next candidate, on its own thread).
  void baseline_recorded() {
    baseline_done_ = true;
    ev_.prepare_baseline_timing();  // before any lane's thread times it
    std::vector<std::size_t> free;
    for (std::size_t i = 0; i < lanes_.size(); ++i)
      if (!lanes_[i].lost && !lanes_[i].retimed && !lane_running(i) && !stopping()) free.push_back(i);
    std::vector<std::future<std::pair<Timing, double>>> timings;
    for (std::size_t i : free) {
      lanes_[i].retimed = true;
      timings.push_back(std::async(std::launch::async, [this, i] {
        TraceSpan span("the baseline re-timed on lane " + std::to_string(i), "lane " + std::to_string(i));
        const auto t0 = Clock::now();
        Timing t = ev_.time_baseline(i);
        return std::make_pair(t, std::chrono::duration<double>(Clock::now() - t0).count());
      }));
    }
    for (std::size_t k = 0; k < free.size(); ++k) {
      std::pair<Timing, double> t;
      try {
        t = timings[k].get();
      } catch (const LaneLost& lost) {
        if (!drop_lane(free[k], lost)) throw;
        continue;
      }
      if (!ev_.measures_instantly()) s_.seconds_gpu += t.second;
      retimed(free[k], t.first);
    }
    auto held = std::move(held_);
    held_.clear();
    for (auto& h : held) finish(h.c, std::move(h.e), false, h.lane);
  }

  void retimed(std::size_t i, const Timing& t) {
    if (t.outcome == Outcome::Passed && t.p50_us > 0)
      lanes_[i].baseline_p50_us = t.p50_us;
    else
      spdlog::warn("baseline could not be re-timed on {} ({}): speedups use its recorded median", ev_.lane_device(i),
                   t.reason);
    run_baseline_from(i);
  }

  // The run's baseline (its summary's and the store's) is lane 0's timing, else the first lane's.
  void run_baseline_from(std::size_t i) {
    if (i != 0 && s_.baseline_p50_us > 0) return;
    if (lanes_[i].baseline_p50_us > 0) s_.baseline_p50_us = lanes_[i].baseline_p50_us;
    if (s_.baseline_p50_us > 0) store_.set_run_baseline(s_.run_id, s_.baseline_p50_us);
  }

  // A new evaluation's result (measured on `lane`): into the summary's phase times, then recorded.
  void record(const Candidate& c, Evaluation e, std::size_t lane) {
    e.config = c.config;
    e.config_hash = config_hash(c.config);
    e.origin = c.origin;
    s_.seconds_compile += e.seconds_compile;
    s_.longest_compile_s = std::max(s_.longest_compile_s, e.seconds_compile);
    s_.seconds_green += e.seconds_green;
    s_.seconds_fast += e.seconds_fast;
    s_.seconds_metrics += e.seconds_metrics;
    if (s_.seconds_first_result <= 0) s_.seconds_first_result = seconds();
    finish(c, std::move(e), false, lane);
  }

  // One candidate's final word: one transaction, then the strategy hears of it.
  // Its device is the one that measured it: elites and read-back are per device name.
  void finish(const Candidate& c, Evaluation e, bool reused, std::size_t lane = 0) {
    if (!baseline_done_ && !reused && e.measured() && e.config_hash != baseline_hash_) {
      held_.push_back({c, std::move(e), lane});  // its speedup needs the baseline: recorded with it
      return;                                     // (and in flight until then)
    }
    in_flight_.erase(e.config_hash);
    recorded_.insert(e.config_hash);
    const double lane_base = lanes_[lane].baseline_p50_us > 0 ? lanes_[lane].baseline_p50_us : s_.baseline_p50_us;
    const double base = e.origin.kind == "baseline" && lane_base <= 0 ? e.fast.p50_us : lane_base;
    e.speedup = e.measured() && e.fast.p50_us > 0 && base > 0 ? base / e.fast.p50_us : 0;
    EvalKey key = key_of(e.config);
    if (!reused) key.device = ev_.lane_device(lane);
    const std::int64_t id = store_.record(s_.run_id, key, e, reused);
    const bool best = is_new_best(e);
    count(id, e, reused);
    if (e.measured()) measured_.push_back({id, c, e});
    strategy_.observe(e);
    if (e.config_hash == baseline_hash_) {
      // Measured here, in this run: its own FAST is that device's timing of it, side by side with
      // what the device measures next; only the other devices re-time it (45 ms each, call Q).
      if (!reused && e.measured() && e.fast.p50_us > 0) {
        lanes_[lane].retimed = true;
        lanes_[lane].baseline_p50_us = e.fast.p50_us;
        run_baseline_from(lane);
      }
      baseline_recorded();
    }
    if (best) {
      if (o_.progress) end_progress();
      // A candidate may finish before the baseline does (the pipeline measures whichever is ready).
      spdlog::info("new best #{}: {} us ({}) {} [{}{}]", id, fmt("%.2f", e.fast.p50_us),
                   e.speedup > 0 ? fmt("%.2f", e.speedup) + "x baseline" : std::string("baseline not timed yet"),
                   config_text(e.config), e.origin.kind, e.origin.rule.empty() ? "" : ":" + e.origin.rule);
    }
    if (o_.progress)
      draw_progress();
    else if ((s_.new_evaluations - new_at_start_) % 25 == 0 && !reused)
      spdlog::info("{}/{} new, {} read back, valid {}%, best {}, {}", s_.new_evaluations, o_.budget,
                   s_.evaluations - s_.new_evaluations, valid_pct(), best_text(), busy_text());
  }

  // D. The best must pass compute-sanitizer before it is reported: the fastest not yet checked is
  // run under memcheck now, while the GPU is free; a failure marks it and the next best is checked.
  void check_best() {
    TraceSpan span("memcheck of the best", "coordinator");
    std::stable_sort(measured_.begin(), measured_.end(),
                     [](const Measured& a, const Measured& b) { return a.e.fast.p50_us < b.e.fast.p50_us; });
    const auto t0 = Clock::now();
    int tries = 0;
    for (auto& m : measured_) {
      if (m.e.sanitize.outcome == Outcome::Passed) break;  // checked already (read back, or --sanitize)
      if (m.e.sanitize.outcome != Outcome::Skipped || tries++ == kSanitizeTries) break;
      SanitizeVerdict v = ev_.sanitize(m.c);
      if (v.outcome == Outcome::Skipped) {
        spdlog::info("memcheck of the best #{}: not run ({})", m.id, v.first_message);
        break;
      }
      m.e.sanitize = v;
      if (v.outcome == Outcome::Passed) {
        store_.set_sanitize(m.id, m.e);
        spdlog::info("memcheck of the best #{}: clean", m.id);
        break;
      }
      m.e.status = Status::SanitizeFailed;
      m.e.message = "compute-sanitizer: " + std::to_string(v.errors) + " errors: " + v.first_message;
      store_.set_sanitize(m.id, m.e);
      spdlog::warn("best #{} failed memcheck ({}): checking the next best", m.id, m.e.message);
      --s_.measured;
      s_.best.reset();
    }
    // The run's best is the fastest that did not fail memcheck.
    for (const auto& m : measured_)
      if (m.e.status == Status::Measured && (!s_.best || m.e.fast.p50_us < s_.best->fast.p50_us))
        s_.best = m.e, s_.best_id = m.id;
    s_.seconds_sanitize = std::chrono::duration<double>(Clock::now() - t0).count();
  }

  // E. Metrics deferred to the end (a strategy that read none while it ran): the run's best
  // measured candidates, fastest first, profiled now (side by side where there are several GPUs)
  // and their records completed.
  void profile_the_best() {
    TraceSpan span("metrics of the best at the end", "coordinator");
    std::vector<Measured*> best;
    for (auto& m : measured_)
      if (m.e.status == Status::Measured && m.e.metrics.reason == kMetricsDeferred) best.push_back(&m);
    std::stable_sort(best.begin(), best.end(),
                     [](const Measured* a, const Measured* b) { return a->e.fast.p50_us < b->e.fast.p50_us; });
    if (best.size() > o_.metrics_best_at_end) best.resize(o_.metrics_best_at_end);
    if (best.empty()) return;
    std::vector<Candidate> cs;
    for (const Measured* m : best) cs.push_back(m->c);
    const auto t0 = Clock::now();
    const std::vector<Evaluator::MetricsAlone> got = ev_.collect_metrics_of(cs);
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    double total = 0;
    std::size_t done = 0, without = 0;
    std::string why;
    std::set<int> gpus;
    for (std::size_t i = 0; i < best.size() && i < got.size(); ++i) {
      if (!got[i].metrics) continue;  // none from this evaluator: the record keeps saying it was deferred
      if (got[i].metrics->outcome != Outcome::Passed && !without++) why = got[i].metrics->reason;
      gpus.insert(got[i].lane);
      Measured* m = best[i];
      m->e.metrics = *got[i].metrics;
      m->e.seconds_metrics += got[i].seconds;
      store_.set_metrics(m->id, m->e);
      if (s_.best_id == m->id) s_.best = m->e;
      total += got[i].seconds;
      ++done;
    }
    s_.seconds_metrics += total;
    s_.seconds_metrics_at_end = wall;
    if (done)
      spdlog::info("metrics of the run's {} best, profiled at its end on {} GPU{}: {:.1f} s of passes in {:.1f} s", done,
                   gpus.size(), gpus.size() == 1 ? "" : "s", total, wall);
    if (without)  // recorded with the reason (evo show); said here so that nobody reads the line above as figures
      spdlog::warn("{} of them got no metrics: {}", without, why.empty() ? "no reason given" : why);
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
        if (o_.metrics_near_best > 0) {
          ev_.set_metrics_max_p50_us(o_.metrics_near_best * e.fast.p50_us);
          ev_.set_metrics_wait_max_p50_us(e.fast.p50_us);
        }
      }
    }
  }

  EvalKey key_of(const Config& c) const {
    return {profile_.name, ev_.build_key(c), ev_.device(), profile_.objective_problem().name, setup_};
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
  // How busy the compile workers and the GPUs (on average) have been so far.
  std::string busy_text() const {
    const double wall = std::max(seconds(), 1e-9);
    return "cpu " + fmt("%.0f", 100 * s_.seconds_compile / (wall * s_.compile_slots)) + "% gpu " +
           fmt("%.0f", 100 * s_.seconds_gpu / (wall * s_.gpus)) + "%";
  }

  void draw_progress() {
    const double el = seconds();
    const std::int64_t done = s_.new_evaluations - new_at_start_;
    const std::int64_t left = o_.budget - spent();
    std::string eta = done > 0 && left > 0 ? duration_text(el / done * left) : "-";
    std::fprintf(stderr, "\r\x1b[K%lld/%lld new | valid %s%% | best %s | %s | ETA %s",
                 static_cast<long long>(s_.new_evaluations), static_cast<long long>(o_.budget), valid_pct().c_str(),
                 best_text().c_str(), busy_text().c_str(), eta.c_str());
    std::fflush(stderr);
    drawn_ = true;
  }
  void end_progress() {
    if (drawn_) std::fputs("\n", stderr);
    drawn_ = false;
  }

  struct Measured {
    std::int64_t id;
    Candidate c;
    Evaluation e;
  };

  const Profile& profile_;
  const std::string setup_;  // measurement_setup(profile_): part of every key, computed once
  Strategy& strategy_;
  Evaluator& ev_;
  Store& store_;
  const RunOptions& o_;
  Clock::time_point start_;
  RunSummary s_;
  std::size_t ahead_ = 1;
  bool first_top_up_ = true;
  std::size_t finishing_ = 0;  // a GPU's result taken, not yet recorded (finish_measurement)
  // Extra candidates at the budget's end (top_up): only where dropping them costs nothing but
  // their compiles, and never when the run repeats another from the database.
  const bool speculate_ = ev_.can_drop_unfinished() && !o_.repeat_of;
  std::string baseline_hash_;
  std::unordered_set<std::string> recorded_;   // config hashes this run holds
  std::unordered_set<std::string> in_flight_;  // submitted, not yet recorded
  std::deque<Prepared> ready_;                 // compiled and through the static gate: for the GPU
  struct Held {                                // measured before the baseline was: recorded after it
    Candidate c;
    Evaluation e;
    std::size_t lane;
  };
  std::vector<Held> held_;
  bool baseline_done_ = false;
  std::mutex done_m_;                          // lanes' threads -> the loop: a measurement ended
  mutable std::mutex lanes_m_;                 // the lanes' shared fields (Lane), before lanes_ (outlives their threads)
  std::condition_variable done_cv_;            // (before lanes_: outlives their threads)
  std::uint64_t gpu_done_ = 0, gpu_seen_ = 0;
  std::vector<Lane> lanes_;
  std::vector<Measured> measured_;             // this session's and the resumed run's, for D
  std::int64_t new_at_start_ = 0;
  bool defer_metrics_ = false;  // the strategy reads no metrics: profile the best at the end
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
