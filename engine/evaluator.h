// What turns proposed configurations into evidence. The run loop sees only this: the GPU
// evaluator (compile pool + static gate + worker process) and the replay evaluator (a recorded
// landscape) both implement it, so the search is tested on any machine.
#pragma once
#include <string>
#include <vector>

#include "engine/evaluation.h"

namespace evo {

struct Candidate {
  Config config;
  Origin origin;
};

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  virtual std::string device() const = 0;           // goes into EvalKey.device
  virtual std::string driver() const { return ""; }
  virtual std::string build_key(const Config& c) const = 0;  // identity of the build, without compiling
  // Start compiling these ahead while the GPU measures; a hint, may be ignored.
  virtual void prefetch(const std::vector<Config>& upcoming) {}
  // Every gate for one candidate. Never throws for a kernel's failure (that is a verdict);
  // throws UserError only for a broken environment.
  virtual Evaluation evaluate(const Candidate& c) = 0;
  // Metrics cost several replays of the kernel; a run only reads them for candidates near its best
  // (the insight rules' parents). > 0: collect them only when FAST's median is at most this.
  // Ignored where the profile gates on metrics (every candidate then needs them).
  virtual void set_metrics_max_p50_us(double us) {}
  // Times the profile's baseline now, in this run, so speedups are ratios measured side by side.
  virtual Timing time_baseline() = 0;
  // compute-sanitizer memcheck over one candidate's GREEN launches (the run loop checks each new
  // elite). Only an evaluator that launches real kernels can do it.
  virtual SanitizeVerdict sanitize(const Candidate& c) {
    SanitizeVerdict v;
    v.first_message = "not supported by this evaluator";
    return v;
  }
};

}  // namespace evo
