// evo export-t4: a run in the T4 autotuning results format (the Open Autotuning Results Schema,
// schema 1.0.0), as Kernel Tuner writes it (kernel_tuner/file_utils.py, get_t4_results): one entry
// per evaluation with its configuration, times in milliseconds, invalidity, correctness and
// measurements, so tools that read Kernel Tuner's output read evo's. docs/guide.md has the mapping.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "engine/error.h"
#include "population/store.h"

namespace evo::cli {
namespace {

// T4's invalidity: "timeout", "compile", "runtime", "correctness", "constraints" or "correct".
// A static rejection (registers, shared memory) is what Kernel Tuner meets as a launch failure.
std::string invalidity(const Evaluation& e) {
  switch (e.status) {
    case Status::Measured: return e.fast.outcome == Outcome::Passed ? "correct" : "runtime";
    case Status::CompileError: return "compile";
    case Status::StaticRejected: return "runtime";
    case Status::GreenFailed: return "correctness";
    case Status::SanitizeFailed: return "correctness";
    case Status::Crashed: return "runtime";
    case Status::Timeout: return "timeout";
    case Status::MetricRejected: return "constraints";
  }
  return "runtime";
}

nlohmann::json number_or_string(double v) {
  if (std::isfinite(v)) return v;
  return std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
}

}  // namespace

int cmd_export_t4(const Globals& g, std::int64_t run_id, const std::string& to) {
  Store store(g.db, Store::Open::Existing);  // reading commands create nothing
  const auto run = store.run(run_id);
  if (!run) throw UserError("no run " + std::to_string(run_id) + " in " + store.name() + " (see `evo runs`)");

  nlohmann::json results = nlohmann::json::array();
  for (const auto& r : store.evaluations_of_run(run_id)) {
    const Evaluation& e = r.eval;
    nlohmann::json out;
    out["timestamp"] = r.created_at;
    out["configuration"] = e.config;
    // Kernel Tuner's keys; metrics profiling (kernel replays outside the timing) is framework time.
    out["times"] = {{"compilation", e.seconds_compile * 1e3},
                    {"benchmark", e.seconds_fast * 1e3},
                    {"validation", e.seconds_green * 1e3},
                    {"framework", e.seconds_metrics * 1e3},
                    {"runtimes", nlohmann::json::array()}};  // evo keeps the timing's statistics, not each launch
    out["invalidity"] = invalidity(e);
    out["correctness"] = e.green.outcome == Outcome::Passed && e.status != Status::SanitizeFailed ? 1 : 0;
    nlohmann::json m = nlohmann::json::array();
    if (e.fast.outcome == Outcome::Passed) {
      const double to_ms = 1e-3;
      m.push_back({{"name", "time"}, {"value", e.fast.p50_us * to_ms}, {"unit", "ms"}});  // the objective: the median
      m.push_back({{"name", "time_p90"}, {"value", e.fast.p90_us * to_ms}, {"unit", "ms"}});
      m.push_back({{"name", "time_mean"}, {"value", e.fast.mean_us * to_ms}, {"unit", "ms"}});
      m.push_back({{"name", "time_std"}, {"value", e.fast.std_us * to_ms}, {"unit", "ms"}});
      m.push_back({{"name", "time_min"}, {"value", e.fast.min_us * to_ms}, {"unit", "ms"}});
      m.push_back({{"name", "cv"}, {"value", e.fast.cv}, {"unit", ""}});
      if (e.speedup > 0) m.push_back({{"name", "speedup"}, {"value", e.speedup}, {"unit", ""}});
    }
    for (const auto& [name, value] : e.metrics.values)
      m.push_back({{"name", name}, {"value", number_or_string(value)}, {"unit", ""}});
    out["measurements"] = m;
    out["objectives"] = {"time"};
    out["evo"] = {{"evaluation", r.id}, {"status", status_name(e.status)}, {"reused", r.reused},
                  {"message", e.message}, {"origin", e.origin.kind}};
    results.push_back(out);
  }
  const nlohmann::json doc = {
      {"schema_version", "1.0.0"},
      {"metadata",
       {{"timeunit", "milliseconds"},
        {"evo", {{"version", EVO_VERSION}, {"run", run->id}, {"profile", run->profile}, {"strategy", run->strategy},
                 {"seed", run->seed}, {"device", run->device}, {"driver", run->driver}, {"arch", run->arch},
                 {"status", run->status}, {"started_at", run->started_at}}}}},
      {"results", results}};
  std::ofstream f(to, std::ios::binary | std::ios::trunc);
  if (!f) throw UserError(to + ": cannot write here");
  f << doc.dump(1) << '\n';
  if (!f.flush()) throw UserError(to + ": write failed");
  std::cout << "wrote " << to << " (run " << run_id << ", " << results.size() << " results, T4 schema 1.0.0)\n";
  return 0;
}

}  // namespace evo::cli
