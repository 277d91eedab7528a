// Replay: the search against a recorded landscape instead of a GPU (`evo run --replay FILE`), so
// search quality is tested on any machine. A landscape is one JSON file (format
// "evo-landscape/1", docs/search.md): the profile's knob space (knobs, constraints, problems,
// launch), the device it was recorded on, the baseline and its median, and per configuration
// its final status, median, GREEN figures, ptxas report and hardware metrics. `evo
// export-landscape RUN` writes one from a run (population/landscape.h); the reader and writer
// are both here, so the two agree by construction.
#pragma once
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

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

// A Profile carrying the landscape's knob space, problems and launch (no template: nothing is
// compiled in a replay). Its path is the landscape file.
Profile landscape_profile(const Landscape& l, const std::filesystem::path& path);

class ReplayEvaluator : public Evaluator {
 public:
  // delay_ms: each new evaluation takes this long (to watch a run, or to interrupt one in a test).
  ReplayEvaluator(const std::filesystem::path& path, double delay_ms = 0);

  const Landscape& landscape() const { return landscape_; }
  const Profile& profile() const { return profile_; }

  std::string device() const override { return "replay:" + name_; }
  // Content hash of the landscape file and the config: the same file and config read back.
  std::string build_key(const Config& c) const override;
  // The recorded verdicts. A valid config the landscape does not hold is a compile_error
  // "not recorded in landscape <name>", so a partial landscape still replays.
  Evaluation evaluate(const Candidate& c) override;
  Timing time_baseline() override;  // the recorded baseline median
  SanitizeVerdict sanitize(const Candidate& c) override;  // the recorded verdict, or Skipped

 private:
  Landscape landscape_;
  Profile profile_;
  std::string name_, content_hash_;
  double delay_ms_;
  std::unordered_map<std::string, std::size_t> by_hash_;  // config hash -> points index
};

}  // namespace evo
