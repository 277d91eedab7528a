// JSON forms of the evaluation structs: the worker protocol, the database's detail columns and
// the export's provenance all use these, so the three agree by construction.
#pragma once
#include <nlohmann/json.hpp>

#include "engine/evaluation.h"

namespace evo {

NLOHMANN_JSON_SERIALIZE_ENUM(Outcome, {{Outcome::Passed, "passed"},
                                       {Outcome::Rejected, "rejected"},
                                       {Outcome::Crashed, "crash"},
                                       {Outcome::Timeout, "timeout"},
                                       {Outcome::Skipped, "skipped"}})
NLOHMANN_JSON_SERIALIZE_ENUM(Status, {{Status::CompileError, "compile_error"},
                                      {Status::StaticRejected, "static_rejected"},
                                      {Status::GreenFailed, "green_failed"},
                                      {Status::Crashed, "crash"},
                                      {Status::Timeout, "timeout"},
                                      {Status::Measured, "measured"},
                                      {Status::MetricRejected, "metric_rejected"},
                                      {Status::SanitizeFailed, "sanitize_failed"}})

// By hand, for one field: wgmma_serialized is written only when ptxas reported a serialised wgmma
// pipeline, so the JSON of every other report (cache entries, database rows, landscapes, exports,
// the proposer's input) is what it was before the field existed. Absent keys read as defaults, as
// the macros below do: a document written before the field reads with it empty.
inline void to_json(nlohmann::json& j, const PtxasReport& r) {
  j = nlohmann::json{{"registers", r.registers},     {"spill_stores", r.spill_stores}, {"spill_loads", r.spill_loads},
                     {"stack_bytes", r.stack_bytes}, {"static_smem", r.static_smem},   {"barriers", r.barriers}};
  if (!r.wgmma_serialized.empty()) j["wgmma_serialized"] = r.wgmma_serialized;
}
inline void from_json(const nlohmann::json& j, PtxasReport& r) {
  const PtxasReport d;
  r.registers = j.value("registers", d.registers);
  r.spill_stores = j.value("spill_stores", d.spill_stores);
  r.spill_loads = j.value("spill_loads", d.spill_loads);
  r.stack_bytes = j.value("stack_bytes", d.stack_bytes);
  r.static_smem = j.value("static_smem", d.static_smem);
  r.barriers = j.value("barriers", d.barriers);
  r.wgmma_serialized = j.value("wgmma_serialized", d.wgmma_serialized);
}
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(LaunchKernel, name_expression, lowered_name, cubin_path, ptxas)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Build, ok, key, cubin_path, lowered_name, log, ptxas, compile_ms,
                                                from_cache, kernels)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(StaticVerdict, outcome, ptxas, threads_per_block, dynamic_smem,
                                                total_smem, blocks_per_sm, occupancy_pct, occupancy_limit, reason)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GreenResult, problem, outcome, max_abs, mean_abs, rel_l2, bad_pct,
                                                nan_count, inf_count, unwritten, trials_run, reason)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GreenVerdict, outcome, problems, reason, reference)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Timing, outcome, problem, mode, iters, p50_us, p90_us, mean_us,
                                                std_us, cv, min_us, reason)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MetricsResult, outcome, values, unavailable, reason)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(MetricGateVerdict, outcome, reason)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(SanitizeVerdict, outcome, errors, first_message)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Origin, kind, rule, parents)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Evaluation, config, config_hash, status, message, build,
                                                static_verdict, green, fast, metrics, metric_gate, sanitize,
                                                speedup, origin, seconds_compile, seconds_green, seconds_fast,
                                                seconds_metrics)

}  // namespace evo
