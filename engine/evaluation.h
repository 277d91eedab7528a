// The evidence one candidate earns on its way through the gates. Plain structs: the worker fills
// them, the population store writes them, the search reads them. A gate that says no is a
// verdict with its figures and reason, never an exception; a gate that could not run says
// Skipped with why, never Passed.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/space.h"

namespace evo {

enum class Outcome { Passed, Rejected, Crashed, Timeout, Skipped };
const char* outcome_name(Outcome o);                 // "passed" "rejected" "crash" "timeout" "skipped"
std::optional<Outcome> parse_outcome(const std::string& s);

// ptxas -v figures of one entry point (from the NVRTC log).
struct PtxasReport {
  int registers = -1;
  std::int64_t spill_stores = 0, spill_loads = 0;
  std::int64_t stack_bytes = 0;
  std::int64_t static_smem = 0;
  int barriers = 0;
  // ptxas's "Potential Performance Loss: wgmma.mma_async instructions are serialized due to ..."
  // (sm_90a), one "CODE: reason" per distinct message, in log order: "C7511: insufficient register
  // resources for the wgmma pipeline". Empty: every wgmma pipeline kept (or no wgmma at all).
  std::vector<std::string> wgmma_serialized;
};
// "C7511, C7513": the codes of r.wgmma_serialized, each once; "" when there are none.
std::string wgmma_serialized_codes(const PtxasReport& r);

// The kernel one launch starts: an entry point of a compiled module.
struct LaunchKernel {
  std::string name_expression;  // as the profile names it
  std::string lowered_name;     // to load
  std::string cubin_path;       // the module holding it
  PtxasReport ptxas;
};

// A compiled candidate (or reference): the cubin lives in the compile cache at cubin_path.
struct Build {
  bool ok = false;
  std::string key;            // content hash: cache key
  std::string cubin_path;     // file in the compile cache
  std::string lowered_name;   // entry point to load
  std::string log;            // NVRTC log (kept on failure)
  PtxasReport ptxas;
  double compile_ms = 0;      // of the real compile, even when this Build came from the cache
  bool from_cache = false;
  // Several entry points: a request naming more (CompileRequest::more_names) lists one per name,
  // the first's also in lowered_name and ptxas; a candidate of several launches (launch_build in
  // engine/compiler.h) one per launch, in launch order. Empty for one entry: the fields above are it.
  std::vector<LaunchKernel> kernels;
};
// b.kernels, or b's one entry as a LaunchKernel (name_expression left empty).
std::vector<LaunchKernel> launch_kernels(const Build& b);

struct StaticVerdict {
  Outcome outcome = Outcome::Skipped;
  PtxasReport ptxas;
  int threads_per_block = 0;
  std::int64_t dynamic_smem = 0;
  std::int64_t total_smem = 0;   // static + dynamic
  // CUDA's occupancy calculator's prediction (gates/static_gate.h): 0 blocks only when rejected.
  int blocks_per_sm = 0;
  double occupancy_pct = 0;      // resident warps / the SM's maximum
  std::string occupancy_limit;   // what limits it: "registers" "shared memory" "warps" "blocks" "barriers"
  std::string reason;            // "42 bytes spilled (limit 0)"
};

// GREEN on one problem (all seeds and trials folded: worst figures kept).
struct GreenResult {
  std::string problem;
  Outcome outcome = Outcome::Skipped;
  double max_abs = 0, mean_abs = 0, rel_l2 = 0, bad_pct = 0;
  std::int64_t nan_count = 0, inf_count = 0, unwritten = 0;
  int trials_run = 0;
  std::string reason;   // "NaN at O[1,3,17,5]"
};

struct GreenVerdict {
  Outcome outcome = Outcome::Skipped;
  std::vector<GreenResult> problems;
  std::string reason;
  std::string reference;  // what the outputs were compared with (Profile::reference_text); "" when nothing was
};

struct Timing {
  Outcome outcome = Outcome::Skipped;
  std::string problem;
  std::string mode;   // "events" or "graph"
  int iters = 0;
  double p50_us = 0, p90_us = 0, mean_us = 0, std_us = 0, cv = 0, min_us = 0;
  std::string reason;
};

// The CUPTI metric names evo collects by default and reads (GH100 names, checked with the CUPTI
// 13.0 host API: ../shared/CUPTI_NVRTC.md), and one it derives. gates/metrics collects them,
// the insight rules and `evo show-elites` read them.
namespace metric {
inline constexpr const char* kDuration = "gpu__time_duration.sum";
// SM busy % and instructions a cycle, not sm__throughput: that one alone costs 8 passes on GH100,
// the rest of the list together 2, and a pass is a relaunch with the counters reprogrammed.
inline constexpr const char* kSmBusy = "sm__cycles_active.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kIpc = "sm__inst_executed.avg.per_cycle_active";
inline constexpr const char* kDramThroughput = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr const char* kTensorPipe = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
inline constexpr const char* kDramRead = "dram__bytes_read.sum";
inline constexpr const char* kDramWrite = "dram__bytes_write.sum";
inline constexpr const char* kConflictsLd = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
inline constexpr const char* kConflictsSt = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum";
inline constexpr const char* kWavefrontsLd = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";
inline constexpr const char* kWavefrontsSt = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum";
inline constexpr const char* kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
// Derived (the seeds' "bank conflicts < 5 % of shared loads"): 100 × kConflictsLd / kWavefrontsLd,
// the share of shared-load wavefronts wasted on conflicts; 0 when the kernel issues no shared loads.
inline constexpr const char* kBankConflictPct = "bank_conflict_pct";
}  // namespace metric

struct MetricsResult {
  Outcome outcome = Outcome::Skipped;   // Skipped: "metrics unavailable: <why>"
  std::map<std::string, double> values;
  std::vector<std::string> unavailable; // names the device could not give
  std::string reason;
};
// A metric's value in a result: a collected name, or kBankConflictPct derived from its inputs when
// `values` lacks it. nullopt when neither is there.
std::optional<double> metric_value(const MetricsResult& m, const std::string& name);


struct MetricGateVerdict {
  Outcome outcome = Outcome::Skipped;   // Skipped when the profile sets no thresholds
  std::string reason;
};

struct SanitizeVerdict {
  Outcome outcome = Outcome::Skipped;
  int errors = 0;
  std::string first_message;
};

// Where a candidate came from (stored as text: "baseline", "random", "mutation", ...).
struct Origin {
  std::string kind = "manual";          // baseline random exhaustive mutation crossover insight external manual
  std::string rule;                     // insight rule name, or proposer note
  std::vector<std::string> parents;     // config hashes
};

// The final word on one candidate for one run.
enum class Status {
  CompileError, StaticRejected, GreenFailed, Crashed, Timeout, Measured, MetricRejected, SanitizeFailed
};
const char* status_name(Status s);   // "compile_error" "static_rejected" "green_failed" "crash" "timeout" "measured" "metric_rejected" "sanitize_failed"
std::optional<Status> parse_status(const std::string& s);

struct Evaluation {
  Config config;
  std::string config_hash;
  Status status = Status::CompileError;
  std::string message;          // one line: why it stopped where it stopped
  Build build;
  StaticVerdict static_verdict;
  GreenVerdict green;
  Timing fast;                  // on the objective problem
  MetricsResult metrics;
  MetricGateVerdict metric_gate;
  SanitizeVerdict sanitize;
  double speedup = 0;           // baseline p50 / this p50, both timed in the same run; 0 if none
  Origin origin;
  double seconds_compile = 0, seconds_green = 0, seconds_fast = 0, seconds_metrics = 0;

  bool green_passed() const { return green.outcome == Outcome::Passed; }
  bool measured() const { return status == Status::Measured && fast.outcome == Outcome::Passed; }
};

}  // namespace evo
