// Replay: the search against a recorded landscape instead of a GPU (`evo run --replay FILE`), so
// search quality is tested on any machine. A landscape is one JSON file (format
// "evo-landscape/1", docs/search.md): the profile's knob space (knobs, constraints, problems,
// launch), the device it was recorded on, the baseline and its median, and per configuration
// its final status, median, GREEN figures, ptxas report and hardware metrics. `evo
// export-landscape RUN` writes one from a run (population/landscape.h); the reader and writer
// are both here, so the two agree by construction.
#pragma once
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/compiler.h"   // defines: kDefaultCompileTimeout_s
#include "engine/evaluator.h"  // defines: Evaluator, Candidate
#include "engine/profile.h"    // defines: Profile, KnobDef, Problem, LaunchSpec

namespace evo {

// What was recorded for one configuration on the objective problem.
struct LandscapePoint {
  Config knobs;
  Status status = Status::Measured;
  std::string message;                 // why it stopped, for failures
  double p50_us = 0, p90_us = 0, cv = 0;  // measured only
  double max_abs = 0, mean_abs = 0;    // worst GREEN errors (0 when not recorded)
  std::map<std::string, double> metrics;
  PtxasReport ptxas;
  Outcome sanitize = Outcome::Skipped; // compute-sanitizer verdict, when one was recorded
  double seconds_compile = 0, seconds_green = 0, seconds_fast = 0, seconds_metrics = 0;
};

struct Landscape {
  std::string profile, problem, device, recorded_at, description;
  Config baseline;
  double baseline_p50_us = 0;          // the baseline as timed when the landscape was recorded
  // The knob space, as in the profile (knob order matters: exhaustive walks it).
  std::vector<KnobDef> knobs;
  std::vector<std::string> constraints;
  std::map<std::string, std::string> defines;
  std::vector<Problem> problems;
  std::string objective;
  LaunchSpec launch;
  std::vector<LandscapePoint> points;
};

// Throws UserError("<file>: <field>: <what>") for a missing, malformed or inconsistent file.
Landscape read_landscape(const std::filesystem::path& path);
// The file's text: one configuration per line so that diffs stay readable.
std::string landscape_text(const Landscape& l);

// How much of its valid space a landscape holds: a run cut short (a time limit, Ctrl-C) exports
// the configurations it evaluated, and a replay gives the others as failures.
struct LandscapeCoverage {
  std::size_t valid = 0;       // configurations that pass the landscape's constraints
  std::size_t recorded = 0;    // of those, the ones with a point
  std::size_t unrecorded() const { return valid - recorded; }
};
// `space`: the landscape's own (KnobSpace(landscape_profile(l, ...))), whose enumeration it caches.
LandscapeCoverage landscape_coverage(const Landscape& l, const KnobSpace& space);
// "" when whole; else one sentence naming the file, how many are missing and what a replay makes of them.
std::string coverage_note(const std::string& file, const LandscapeCoverage& c);

// A Profile carrying the landscape's knob space, problems and launch (no template: nothing is
// compiled in a replay). Its path is the landscape file.
Profile landscape_profile(const Landscape& l, const std::filesystem::path& path);

// Where a profile disagrees with the landscape's record of its space, as "field: what", or nullopt
// when they agree: the name, the knobs and their values in order, the constraints, the defines, the
// problems, the objective, the baseline and the launch geometry. A profile that agrees is the one
// the landscape was recorded from, or one written anew for the same space (evo.tune's tests).
std::optional<std::string> landscape_mismatch(const Landscape& l, const Profile& p);

// Simulated cost of a replayed candidate, so the run loop's pipeline can be watched and tested on
// any machine: `jobs` simulated compile workers take `compile_s` per configuration (a compile
// error too; < 0: the landscape's recorded compile seconds), then one of `gpus` simulated GPUs
// (lanes, as `--devices` gives) takes `gpu_s` per candidate that reaches it. All zero: a replay
// costs nothing and is measured in order, on one. A configuration whose compile seconds (recorded,
// or `compile_s`) pass `compile_timeout_s` is answered as the compile pool would answer it
// (engine/compiler.h, `--compile-timeout`): a compile error saying it was stopped at the limit,
// after those seconds.
struct ReplayCost {
  double compile_s = 0;
  double gpu_s = 0;
  std::size_t jobs = 1;
  std::size_t gpus = 1;
  double compile_timeout_s = kDefaultCompileTimeout_s;
};

class ReplayEvaluator : public Evaluator {
 public:
  ReplayEvaluator(const std::filesystem::path& path, ReplayCost cost = {});

  const Landscape& landscape() const { return landscape_; }
  const Profile& profile() const { return profile_; }

  std::string device() const override { return "replay:" + name_; }
  // Content hash of the landscape file and the config: the same file and config read back.
  std::string build_key(const Config& c) const override;
  // The recorded verdicts. A valid config the landscape does not hold is a compile_error
  // "not recorded in landscape <name>", so a partial landscape still replays.
  void submit(const Candidate& c) override;
  std::vector<Prepared> collect(double timeout_s) override;
  Evaluation measure(const Prepared& p, std::size_t lane) override;
  std::size_t compile_slots() const override { return cost_.jobs; }
  std::size_t lanes() const override { return measures_instantly() ? 1 : cost_.gpus; }
  bool measures_instantly() const override { return cost_.gpu_s <= 0; }
  double drop_unfinished() override;
  bool can_drop_unfinished() const override { return !measures_instantly(); }
  std::vector<std::pair<Config, double>> still_compiling() const override;
  Timing time_baseline(std::size_t lane = 0) override;  // the recorded baseline median
  SanitizeVerdict sanitize(const Candidate& c) override;  // the recorded verdict, or Skipped
  void set_metrics_during_run(bool on) override { metrics_during_run_ = on; }
  // The recorded metrics (what the GPU gave when the landscape was recorded), with their seconds.
  std::optional<MetricsResult> collect_metrics(const Candidate& c, double* seconds) override;

 private:
  bool metrics_during_run_ = true;
  Landscape landscape_;
  Profile profile_;
  std::string name_, content_hash_;
  ReplayCost cost_;
  std::unordered_map<std::string, std::size_t> by_hash_;  // config hash -> points index

  // The simulated compile pool, in seconds since construction: a queued candidate starts on the
  // first slot free after its submission, so the schedule is exact however rarely collect() looks.
  struct Queued {
    Prepared prepared;
    double submitted = 0, cost = 0;
  };
  void advance(double now);
  double now() const;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
  std::deque<Queued> queue_;
  std::vector<double> slot_free_;                     // when each simulated worker is next free
  std::multimap<double, Prepared> compiling_;         // finish time -> candidate
  std::deque<Prepared> ready_;
};

}  // namespace evo
