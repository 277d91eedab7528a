// What turns proposed configurations into evidence. The run loop sees only this: the GPU
// evaluator (compile pool + static gate + worker process) and the replay evaluator (a recorded
// landscape) both implement it, so the search is tested on any machine.
//
// A candidate's way splits where the hardware does. Its CPU stages (compile, static gate) run in
// the compile pool, many at once: submit() starts them, collect() hands back the candidates whose
// CPU stages ended. Its GPU stages (GREEN, FAST, metrics) run one candidate at a time on a device:
// measure(). The run loop (engine/run.cpp) keeps proposals ahead of the compile pool and gives the
// GPU whichever candidate is ready; measure() runs on a thread of the loop's own while submit() and
// collect() go on in the loop's thread, so an evaluator keeps the two sides' state apart.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "engine/error.h"
#include "engine/evaluation.h"

namespace evo {

// The reason a measured candidate's metrics give while they wait for the run's end.
inline constexpr const char* kMetricsDeferred =
    "deferred: the strategy reads no metrics while it runs; the run's best are profiled at its end";

// A device that can no longer measure (its worker cannot be started again): the run loop drops
// that lane and gives its candidate to another, or stops when it was the last.
struct LaneLost : UserError {
  using UserError::UserError;
};

struct Candidate {
  Config config;
  Origin origin;
};

// A candidate after its CPU stages. A compile error or a static rejection is already its final
// verdict (needs_gpu false); otherwise `eval` holds the build and static verdict so far.
struct Prepared {
  Candidate candidate;
  Evaluation eval;
  bool needs_gpu = false;
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual std::string device() const = 0;           // goes into EvalKey.device
  virtual std::string driver() const { return ""; }
  virtual std::string build_key(const Config& c) const = 0;  // identity of the build, without compiling

  // ---- the pipeline ----
  // Starts the candidate's CPU stages. Never blocks on a compile.
  virtual void submit(const Candidate& c) = 0;
  // Candidates whose CPU stages ended, oldest first; waits up to timeout_s for the first one when
  // none has (0: look, don't wait). Empty when nothing ended in time or nothing is submitted.
  virtual std::vector<Prepared> collect(double timeout_s) = 0;
  // The GPU stages of a candidate collect() returned with needs_gpu, on one of lanes() devices
  // (each lane is measured from its own thread, one candidate at a time). Never throws for a
  // kernel's failure (that is a verdict); throws LaneLost when that device can no longer be used,
  // UserError for a broken environment.
  virtual Evaluation measure(const Prepared& p, std::size_t lane) = 0;
  // Devices measuring side by side (`evo run --devices`), and each one's name: timings are only
  // compared between devices of one name.
  virtual std::size_t lanes() const { return 1; }
  virtual std::string lane_device(std::size_t lane) const { return device(); }
  // Compile workers: the run loop keeps at least twice this many candidates ahead of them.
  virtual std::size_t compile_slots() const { return 1; }
  // True when measure() costs no real time (a replay without delays): the loop then measures in
  // its own thread, in submission order, so a seeded replay is the same run every time.
  virtual bool measures_instantly() const { return false; }
  // Candidates submitted and not yet handed back by collect() are forgotten and their compiles
  // stopped: the run loop calls this when it stops with candidates still in their CPU stages (the
  // budget spent, a time limit), so that none of them comes back to a later run. Returns the
  // compile seconds already spent on them (the pipeline's bound counts them too).
  virtual double drop_unfinished() { return 0; }
  // True when drop_unfinished() costs nothing but the compiles it stops (this host's compile
  // processes): at a run's end the loop then keeps idle compile workers busy with extra
  // candidates while the GPUs wait for a long compile, and records whichever finish first
  // (engine/run.cpp, "the budget's end"). A work queue's claims on other hosts are not.
  virtual bool can_drop_unfinished() const { return false; }
  // Candidates a compile worker is compiling now, each with the seconds it has so far (those still
  // waiting for a worker are left out). Empty where this evaluator does not know.
  virtual std::vector<std::pair<Config, double>> still_compiling() const { return {}; }

  // Every gate for one candidate, synchronously (evo eval, tests); not to be mixed with submit().
  virtual Evaluation evaluate(const Candidate& c);

  // Metrics cost several replays of the kernel; a run only reads them for candidates near its best
  // (the insight rules' parents). > 0: collect them only when FAST's median is at most this.
  // Ignored where the profile gates on metrics (every candidate then needs them). May be called
  // while measure() runs on another thread.
  virtual void set_metrics_max_p50_us(double us) {}
  // The run's best median so far. Where GPUs of one host take turns at the metrics pass, a
  // candidate that finds another GPU profiling waits for its turn only if it beats this, and goes
  // without metrics otherwise (engine/worker.h, take_metrics_turn). Same calling rules as above.
  virtual void set_metrics_wait_max_p50_us(double us) {}
  // false: no metrics pass while the run goes on; each measured candidate's metrics say
  // kMetricsDeferred, and the run collects its best ones' at its end (collect_metrics). For a
  // strategy that reads no metrics as it runs (exhaustive, random): a pass mid-run only keeps a GPU
  // from the next candidate, and slows the other GPUs' (issue 35). Called before the first submit().
  virtual void set_metrics_during_run(bool on) {}
  // One measured candidate's hardware metrics alone (no gate is run again), now, with the seconds
  // they took; nullopt where this evaluator collects none. Called only while no measure() is running.
  virtual std::optional<MetricsResult> collect_metrics(const Candidate& c, double* seconds) { return std::nullopt; }
  // The same for several candidates (the run's best, at its end), in their order. An evaluator of
  // several devices may profile them side by side, one candidate a device at a time, where that
  // is sooner than on one (issue 35). Same calling rules.
  struct MetricsAlone {
    std::optional<MetricsResult> metrics;
    double seconds = 0;  // the pass's own seconds, as the worker timed them
    int lane = 0;        // the lane (device) that profiled it
  };
  virtual std::vector<MetricsAlone> collect_metrics_of(const std::vector<Candidate>& cs) {
    std::vector<MetricsAlone> out(cs.size());
    for (std::size_t i = 0; i < cs.size(); ++i) out[i].metrics = collect_metrics(cs[i], &out[i].seconds);
    return out;
  }
  // Times the profile's baseline now on that lane's device, in this run, so speedups are ratios
  // measured side by side. Called while no measure() runs on that lane, from the loop's thread or
  // the lane's own (beside the other lanes' measure()), after prepare_baseline_timing().
  virtual Timing time_baseline(std::size_t lane = 0) = 0;
  // Readies what time_baseline needs (the baseline's build), on the loop's thread, so that the
  // lanes' threads can time it without touching the compile stages.
  virtual void prepare_baseline_timing() {}
  // compute-sanitizer memcheck over one candidate's GREEN launches (the run loop checks its best
  // before it reports it). Only an evaluator that launches real kernels can do it. Called only
  // while no measure() is running.
  virtual SanitizeVerdict sanitize(const Candidate& c) {
    SanitizeVerdict v;
    v.first_message = "not supported by this evaluator";
    return v;
  }
};

}  // namespace evo
