// Building a landscape from a stored run (population/landscape.h).
#include "population/landscape.h"

#include <algorithm>
#include <fstream>
#include <map>

#include "engine/error.h"
#include "engine/profile.h"
#include "engine/replay.h"

namespace evo {

Landscape write_landscape(const Store& store, std::int64_t run, const std::filesystem::path& path) {
  auto info = store.run(run);
  if (!info) throw UserError("no run " + std::to_string(run) + " in " + store.name() + " (see `evo runs`)");
  auto evals = store.evaluations_of_run(run);
  if (evals.empty()) throw UserError("run " + std::to_string(run) + " has no evaluations to export");

  // The knob space: a replay run read it from its landscape, a GPU run from its profile.
  Landscape l;
  const bool replayed = info->device.rfind("replay:", 0) == 0;
  if (replayed) {
    Landscape src = read_landscape(info->profile_path);
    l = src;
    l.points.clear();
  } else {
    Profile p = load_profile(info->profile_path.empty() ? resolve_profile(info->profile) : std::filesystem::path(info->profile_path));
    l.description = p.description;
    l.knobs = p.knobs;
    l.constraints = p.constraints;
    l.defines = p.kernel.defines;
    l.problems = p.problems;
    l.objective = evals.front().key.problem;  // the run's own (`evo run --objective` may name another)
    l.launch = p.kernel.launch;
    l.baseline = p.baseline;
  }
  l.profile = info->profile;
  l.device = replayed ? l.device : info->device;
  l.problem = evals.front().key.problem;
  l.recorded_at = "evo export-landscape of run " + std::to_string(run) + " (started " + info->started_at + ")";
  if (info->baseline_p50_us > 0) l.baseline_p50_us = info->baseline_p50_us;

  // A config evaluated twice in the run (a timing that did not pass, then again) keeps its
  // measured verdict, else its first.
  std::map<std::string, std::size_t> at;
  for (const auto& s : evals) {
    const Evaluation& e = s.eval;
    LandscapePoint p;
    p.knobs = e.config;
    p.status = e.status;
    p.message = e.message;
    if (e.status == Status::Measured && e.fast.outcome != Outcome::Passed) {
      p.status = Status::Timeout;  // measured but timing did not pass: no median to replay
      p.message = e.fast.reason.empty() ? "FAST " + std::string(outcome_name(e.fast.outcome)) : e.fast.reason;
    }
    p.p50_us = e.fast.p50_us;
    p.p90_us = e.fast.p90_us;
    p.cv = e.fast.cv;
    for (const auto& g : e.green.problems) {
      p.max_abs = std::max(p.max_abs, g.max_abs);
      p.mean_abs = std::max(p.mean_abs, g.mean_abs);
    }
    p.metrics = e.metrics.values;
    p.ptxas = e.static_verdict.ptxas.registers >= 0 ? e.static_verdict.ptxas : e.build.ptxas;
    p.sanitize = e.sanitize.outcome;
    p.seconds_compile = e.seconds_compile;
    p.seconds_green = e.seconds_green;
    p.seconds_fast = e.seconds_fast;
    p.seconds_metrics = e.seconds_metrics;
    auto [it, fresh] = at.emplace(e.config_hash, l.points.size());
    if (fresh)
      l.points.push_back(std::move(p));
    else if (l.points[it->second].status != Status::Measured && p.status == Status::Measured)
      l.points[it->second] = std::move(p);
  }

  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(path.string() + ": cannot write the landscape (no such folder or permission denied)");
  out << landscape_text(l);
  if (!out.flush()) throw UserError(path.string() + ": write failed");
  return l;
}

}  // namespace evo
