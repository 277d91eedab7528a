// Hardware metrics of one kernel through CUPTI's range profiler (CUDA 13: cupti_range_profiler.h
// with cupti_profiler_host.h; call sequence in ../shared/CUPTI_NVRTC.md). The kernel is replayed
// as many passes as the metric list needs, so metrics are never part of the FAST timing. Where
// profiling is not permitted (CUPTI_ERROR_INSUFFICIENT_PRIVILEGES …) or a metric does not exist
// on the device, the result says which and why; it never throws for that.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/evaluation.h"
#include "engine/profile.h"

namespace evo {

// The default list (GH100 names, checked in CUPTI_NVRTC.md): duration, SM busy %, instructions a
// cycle, tensor-pipe activity %, DRAM bytes read/written and throughput %, shared-memory bank
// conflicts (load/store), shared-memory wavefronts (load/store, the denominators), achieved
// occupancy: 2 passes on GH100 (sm__throughput, the list's SM figure until 2026-11-27, alone
// needed 8; a profile that wants it names it in gates.metrics.names).
const std::vector<std::string>& default_metric_names();

// Profiles `launch` (which launches the unit once on `stream`, idempotently: it is called once
// per pass) on the current device and returns each metric's value. Buffers must already hold
// valid inputs. An empty `names` means default_metric_names(). CUPTI's auto range with user
// replay: each kernel `launch` starts is one range, and `launch` is called again for every pass
// the metric list needs; with EVO_METRICS_REPLAY=kernel (or where the device refuses user
// replay) kernel replay: `launch` once, and CUPTI replays each kernel, saving and restoring the
// context's device memory between passes. Several kernels: the figures cover all of them
// (combine_ranges), or only the `only`-th (0-based) when given. A CudaError thrown by `launch` is
// passed on (after the profiler is disabled): a faulting kernel is a crash, not "metrics unavailable".
// false when EVO_METRICS_REPLAY=kernel asks for CUPTI's kernel replay.
bool metrics_user_replay();
// `before_pass` (when given) runs before each pass outside the profiled range: the worker
// restores inout buffers and flushes L2 there, so that every pass sees what a FAST launch sees
// (with user replay, the inputs a pass reads would otherwise be in L2 from the pass before).
// `keep_session`: leave the range profiler enabled on the context for the next collection (the
// run's end profiles its best one after another; enabling and configuring again is CUPTI's cost
// each time, docs/results/scale7). The caller must end_metrics_session() before it times
// anything on that context: FAST never times inside a profiling session.
// EVO_METRICS_KEEP_SESSION=0 ignores `keep_session` (to compare both).
MetricsResult collect_metrics(const std::vector<std::string>& names, const std::function<void()>& launch,
                              cudaStream_t stream, std::optional<std::size_t> only = std::nullopt,
                              const std::function<void()>& before_pass = {}, bool keep_session = false);
// Several units in one collection (the run's end profiling its best): one configuration, and in
// each pass one Start and Stop around all of them, each unit's `before` then its `launch`. Alone,
// each collection costs 25-30 ms of CUPTI's calls, which take turns host-wide: ten on four GPUs at
// once took as long as on one (docs/results/scale12). Each unit must say how many kernels its
// launch starts (`kernels`), every one a range of its own, and together at most the profiler's
// room (16 ranges); when what ran does not add up, every result is Skipped saying so, and the
// caller profiles them one by one. Units read the same kept buffers: `before` restores what the
// unit before it changed.
struct MetricsUnit {
  std::function<void()> launch;
  std::function<void()> before;  // outside any range: a restore, an L2 flush (no kernel)
  std::size_t kernels = 0;       // what `launch` starts; 0: unknown (alone only)
};
constexpr std::size_t kMetricsBatchRanges = 16;
std::vector<MetricsResult> collect_metrics_batch(const std::vector<std::string>& names, const std::vector<MetricsUnit>& units,
                                                 cudaStream_t stream, bool keep_session = false);

// Steps A-C of a collection ahead of it (CUPTI's initialisation, the device's counters, the metric
// plan: 0.2-0.8 s, host-side but for the counter query), on the calling thread's current device;
// a later collect_metrics of the same names starts at the session. Never throws: what is
// unavailable is said by that collection. A pool's profiling worker calls it at its start
// (EVO_METRICS_PREWARM=0: not); a measuring worker given metrics jobs (EVO_METRICS_PROCESS=0) on a
// thread of its own when its first such job arrives. The counter query touches the GPU: made
// beside another process's kernels on it, it stalled them (docs/results/scale11).
void prepare_metrics(const std::vector<std::string>& names);
// Disables the session a `keep_session` collection left enabled; nothing when there is none. An
// enabled session holds the GPU's profiler: other processes' collections there fail meanwhile.
// (Taking CUPTI's hooks out as well, cuptiProfilerDeInitialize, did not undo what CUPTI changed in
// the process's timings, docs/results/scale10 §3, and nothing else needs it: evo never does.)
void end_metrics_session();
// Whether a `keep_session` collection left a session enabled (end_metrics_session not since).
bool metrics_session_kept();

// One figure for a unit of several kernels from each kernel's (range's) figures, by what the name
// says it is: counts and durations (`.sum`) add up, `.max` and `.min` take the extreme, and rates,
// averages and percentages (anything else) are averaged weighted by each kernel's duration
// (metric::kDuration, when every range has it; else an equal-weight mean, and `equal_weights` is
// set). A metric missing from some range is left out of the result.
struct CombinedRanges {
  std::map<std::string, double> values;
  bool equal_weights = false;
};
CombinedRanges combine_ranges(const std::vector<std::map<std::string, double>>& ranges);

// The profile's accept/reject thresholds over a MetricsResult: Skipped (with why) when there are
// no thresholds or the metrics it needs are unavailable; Rejected naming the first metric outside
// its bounds with both figures.
MetricGateVerdict metric_gate(const MetricsResult& m, const std::vector<MetricThreshold>& thresholds);

// A threshold may also name metric::kBankConflictPct (engine/evaluation.h): collect_metrics gathers
// its two inputs when the name is asked for, and adds it to `values` whenever both were collected.
using metric::kBankConflictPct;

// Host-side check of a metric list for a chip ("GH100"), with no GPU: CUPTI's host API knows each
// chip's metrics, so this runs on CPU CI. `collect` are the names the chip has (derived names
// expanded to their inputs), `unknown` those it has not, `passes` how many replays of the kernel
// `collect` needs. `error` is set (and the rest empty) when the host API itself fails.
struct MetricPlan {
  std::vector<std::string> collect, unknown;
  std::size_t passes = 0;
  std::string error;
};
MetricPlan plan_metrics(const std::string& chip, const std::vector<std::string>& names);

}  // namespace evo
