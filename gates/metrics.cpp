// CUPTI range profiler, CUDA 13.0 (call sequence and the numbers below: ../shared/CUPTI_NVRTC.md §1-4).
//
//   A. once per process: cuptiProfilerInitialize
//   B. per device: is profiling supported, the chip name, the counter-availability image
//   C. per (chip, metric list), cached: host object, config image, number of passes
//   D. per call: enable the range profiler on the context, counter-data image, SetConfig
//      (auto range + user replay), Start / launch / Stop per pass, decode, evaluate, disable
//
// Any CUPTI failure in A-D becomes MetricsResult{Skipped, "metrics unavailable: <call>: <why>"}:
// an internal `Unavailable` exception carries it to collect_metrics, which never lets it out.
// evo never links libcuda (CUDA_NOTES.md), so the two driver calls the profiler needs (the current
// CUcontext and its CUdevice) are reached through cudaGetDriverEntryPointByVersion.
#include "gates/metrics.h"

#include <cuda.h>  // CUcontext, CUdevice, CUresult: types only, no libcuda symbol is linked
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_result.h>
#include <cupti_target.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <utility>

#include "engine/error.h"
#include "engine/device.h"  // defines: CudaError, is_sticky

namespace evo {
namespace {

using namespace metric;  // the names (engine/evaluation.h)

// Ranges the counter-data image holds: one per kernel that `launch` starts; beyond this many the
// rest are dropped (and the reason says so).
constexpr std::size_t kMaxRanges = kMetricsBatchRanges;
// EVO_METRICS_MAX_RANGES=N (1-16): room for N ranges instead, an experiment's switch to see
// whether cuptiRangeProfilerStart's cost (about 80 ms a pass on GH100) depends on it.
std::size_t max_ranges() {
  const char* e = std::getenv("EVO_METRICS_MAX_RANGES");
  if (!e || !*e) return kMaxRanges;
  const long n = std::strtol(e, nullptr, 10);
  return n >= 1 && n <= static_cast<long>(kMaxRanges) ? static_cast<std::size_t>(n) : kMaxRanges;
}

// Why metrics cannot be had; caught in collect_metrics and turned into a Skipped result.
struct Unavailable {
  std::string why;
};

std::string cupti_text(CUptiResult r) {
  const char* name = nullptr;
  if (cuptiGetResultString(r, &name) != CUPTI_SUCCESS || !name) return "CUPTI error " + std::to_string(int(r));
  std::string s = name;
  // The codes that mean "this machine will not let us count", with the fix users need to hear.
  if (r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES || r == CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES)
    s += " (performance counters are restricted to admin users: "
         "https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
  else if (r == CUPTI_ERROR_HARDWARE_BUSY)
    s += " (another profiler, e.g. DCGM or ncu, holds the counters)";
  else if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    s += " (the process already runs under a CUPTI tool such as nsys or ncu)";
  return s;
}

void cupti_check(CUptiResult r, const char* call) {
  if (r != CUPTI_SUCCESS) throw Unavailable{std::string(call) + ": " + cupti_text(r)};
}
#define EVO_CUPTI(call) cupti_check((call), #call)

std::string number(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

// ---- the CUDA driver, without linking it ------------------------------------------------------

template <class Fn>
Fn driver_entry(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  // 12000: the ABI of these two calls has not changed since CUDA 12.0 (cuda.h gives their v1 form).
  if (cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess || !fn)
    throw Unavailable{std::string("driver entry point ") + symbol + " not found"};
  return reinterpret_cast<Fn>(fn);
}

struct CurrentContext {
  CUcontext ctx = nullptr;
  CUdevice device = 0;
};

// The context the runtime uses on the current device (created here if it does not exist yet).
CurrentContext current_context() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    cudaGetLastError();  // not sticky: clear it
    throw Unavailable{std::string("no CUDA device: ") +
                      (e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount found none")};
  }
  if ((e = cudaFree(nullptr)) != cudaSuccess)  // makes the primary context current
    throw Unavailable{std::string("no CUDA context: ") + cudaGetErrorString(e)};
  using CtxGetCurrent = CUresult (*)(CUcontext*);
  using CtxGetDevice = CUresult (*)(CUdevice*);
  CurrentContext c;
  if (driver_entry<CtxGetCurrent>("cuCtxGetCurrent")(&c.ctx) != CUDA_SUCCESS || !c.ctx)
    throw Unavailable{"cuCtxGetCurrent gave no context"};
  if (driver_entry<CtxGetDevice>("cuCtxGetDevice")(&c.device) != CUDA_SUCCESS)
    throw Unavailable{"cuCtxGetDevice failed"};
  return c;
}

// ---- A. process-wide initialisation -----------------------------------------------------------

void initialize_profiler() {
  // cuptiProfilerInitialize loads nvperf and hooks the driver; once per process. Its result is
  // kept: a failure (no driver hooks, another tool attached) will not change on a second try.
  static std::once_flag once;
  static CUptiResult result = CUPTI_SUCCESS;
  std::call_once(once, [] {
    CUpti_Profiler_Initialize_Params p{CUpti_Profiler_Initialize_Params_STRUCT_SIZE, nullptr};
    result = cuptiProfilerInitialize(&p);
  });
  cupti_check(result, "cuptiProfilerInitialize");
}

// ---- B. the device ----------------------------------------------------------------------------

void check_device_supported(CUdevice dev) {
  CUpti_Profiler_DeviceSupported_Params p{};
  p.structSize = CUpti_Profiler_DeviceSupported_Params_STRUCT_SIZE;
  p.cuDevice = dev;
  p.api = CUPTI_PROFILER_RANGE_PROFILING;
  EVO_CUPTI(cuptiProfilerDeviceSupported(&p));
  if (p.isSupported == CUPTI_PROFILER_CONFIGURATION_SUPPORTED) return;
  // Name the first cause CUPTI flags; DISABLED (vGPU) means supported but switched off.
  const std::pair<const char*, CUpti_Profiler_Support_Level> causes[] = {
      {"architecture older than sm_70", p.architecture}, {"SLI", p.sli},
      {"vGPU profiling", p.vGpu},                         {"confidential computing", p.confidentialCompute},
      {"CMP device", p.cmp},                              {"WSL", p.wsl}};
  for (const auto& [what, level] : causes)
    if (level != CUPTI_PROFILER_CONFIGURATION_SUPPORTED)
      throw Unavailable{std::string("device not supported by the range profiler: ") + what +
                        (level == CUPTI_PROFILER_CONFIGURATION_DISABLED ? " (disabled)" : "")};
  throw Unavailable{"device not supported by the range profiler"};
}

std::string chip_name(CUdevice dev) {
  CUpti_Device_GetChipName_Params p{};
  p.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
  p.deviceIndex = static_cast<std::size_t>(dev);
  EVO_CUPTI(cuptiDeviceGetChipName(&p));
  return p.pChipName ? p.pChipName : "";
}

// Which counters this context can read; the host API uses it to refuse metrics that need others.
// It is the first call that touches the counters, so it is where a missing permission shows.
std::vector<std::uint8_t> counter_availability(CUcontext ctx) {
  CUpti_Profiler_GetCounterAvailability_Params p{};
  p.structSize = CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE;
  p.ctx = ctx;
  EVO_CUPTI(cuptiProfilerGetCounterAvailability(&p));  // size only
  std::vector<std::uint8_t> image(p.counterAvailabilityImageSize);
  p.pCounterAvailabilityImage = image.data();
  EVO_CUPTI(cuptiProfilerGetCounterAvailability(&p));
  return image;
}

// ---- C. host side: metric names -> config image -------------------------------------------------

// The host object CUPTI allocates per chip; deinitialised with its owner.
class HostObject {
 public:
  HostObject(const std::string& chip, const std::uint8_t* availability) {
    CUpti_Profiler_Host_Initialize_Params p{};
    p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = availability;  // NULL is accepted for chips CUPTI 13.0 knows
    EVO_CUPTI(cuptiProfilerHostInitialize(&p));
    obj_ = p.pHostObject;
  }
  ~HostObject() {
    if (!obj_) return;
    CUpti_Profiler_Host_Deinitialize_Params p{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE, nullptr, obj_};
    cuptiProfilerHostDeinitialize(&p);
  }
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;

  bool knows(const std::string& metric) const {
    CUpti_Profiler_Host_GetMetricProperties_Params p{};
    p.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
    p.pHostObject = obj_;
    p.pMetricName = metric.c_str();
    return cuptiProfilerHostGetMetricProperties(&p) == CUPTI_SUCCESS;
  }
  CUptiResult add(const std::vector<const char*>& names) {
    CUpti_Profiler_Host_ConfigAddMetrics_Params p{};
    p.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    p.pHostObject = obj_;
    p.ppMetricNames = const_cast<const char**>(names.data());
    p.numMetrics = names.size();
    return cuptiProfilerHostConfigAddMetrics(&p);
  }
  std::vector<std::uint8_t> config_image() const {
    CUpti_Profiler_Host_GetConfigImageSize_Params s{};
    s.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
    s.pHostObject = obj_;
    EVO_CUPTI(cuptiProfilerHostGetConfigImageSize(&s));
    std::vector<std::uint8_t> image(s.configImageSize);
    CUpti_Profiler_Host_GetConfigImage_Params g{};
    g.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
    g.pHostObject = obj_;
    g.configImageSize = image.size();
    g.pConfigImage = image.data();
    EVO_CUPTI(cuptiProfilerHostGetConfigImage(&g));
    return image;
  }
  CUpti_Profiler_Host_Object* get() const { return obj_; }

 private:
  CUpti_Profiler_Host_Object* obj_ = nullptr;
};

std::vector<const char*> c_names(const std::vector<std::string>& v) {
  std::vector<const char*> out;
  for (const auto& s : v) out.push_back(s.c_str());
  return out;
}

// The names to ask CUPTI for: derived names replaced by their inputs, duplicates dropped.
std::vector<std::string> expand(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  auto add = [&](const std::string& n) {
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  };
  for (const auto& n : names) {
    if (n == kBankConflictPct) {
      add(kConflictsLd);
      add(kWavefrontsLd);
    } else {
      add(n);
    }
  }
  return out;
}

// What C produces; kept for the process's life (the worker profiles many candidates with one
// list, and building it loads nvperf's metric tables). `availability` outlives `host` because
// CUPTI may keep the pointer it was given.
struct HostPlan {
  std::vector<std::uint8_t> availability;
  std::unique_ptr<HostObject> host;
  std::vector<std::string> collect, unknown;
  std::vector<std::uint8_t> config;
  std::size_t passes = 0;
};

std::unique_ptr<HostPlan> build_plan(const std::string& chip, std::vector<std::uint8_t> availability,
                                     const std::vector<std::string>& names) {
  auto plan = std::make_unique<HostPlan>();
  plan->availability = std::move(availability);
  const std::uint8_t* avail = plan->availability.empty() ? nullptr : plan->availability.data();
  plan->host = std::make_unique<HostObject>(chip, avail);
  for (const auto& n : expand(names)) (plan->host->knows(n) ? plan->collect : plan->unknown).push_back(n);
  if (plan->collect.empty()) return plan;
  if (plan->host->add(c_names(plan->collect)) != CUPTI_SUCCESS) {
    // A known name whose counters this context cannot read (MIG, say) fails the whole list. Find
    // which, each on a fresh host object: a failed add may leave the object's config half-built.
    std::vector<std::string> ok;
    for (const auto& n : plan->collect) {
      HostObject probe(chip, avail);
      (probe.add({n.c_str()}) == CUPTI_SUCCESS ? ok : plan->unknown).push_back(n);
    }
    plan->collect = ok;
    plan->host = std::make_unique<HostObject>(chip, avail);
    if (plan->collect.empty()) return plan;
    EVO_CUPTI(plan->host->add(c_names(plan->collect)));
  }
  plan->config = plan->host->config_image();
  CUpti_Profiler_Host_GetNumOfPasses_Params p{};
  p.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
  p.configImageSize = plan->config.size();
  p.pConfigImage = plan->config.data();
  EVO_CUPTI(cuptiProfilerHostGetNumOfPasses(&p));
  plan->passes = p.numOfPasses;
  return plan;
}

// ---- D. one profiling session -----------------------------------------------------------------

// The range profiler enabled on a context; disabled on every way out, so that a throwing `launch`
// or a failed CUPTI call leaves the context free for timing and for the next candidate.
class RangeSession {
 public:
  explicit RangeSession(CUcontext ctx) {
    CUpti_RangeProfiler_Enable_Params p{};
    p.structSize = CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE;
    p.ctx = ctx;
    EVO_CUPTI(cuptiRangeProfilerEnable(&p));
    obj_ = p.pRangeProfilerObject;
  }
  ~RangeSession() {
    CUpti_RangeProfiler_Disable_Params p{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE, nullptr, obj_};
    cuptiRangeProfilerDisable(&p);
  }
  RangeSession(const RangeSession&) = delete;
  RangeSession& operator=(const RangeSession&) = delete;
  CUpti_RangeProfiler_Object* get() const { return obj_; }

 private:
  CUpti_RangeProfiler_Object* obj_ = nullptr;
};

// A CUPTI call that failed while the candidate was running may be the kernel's fault: if the
// context died, that is a crash for the worker to report, not "metrics unavailable".
void check_during_launch(CUptiResult r, const char* call, cudaStream_t stream) {
  if (r == CUPTI_SUCCESS) return;
  cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess && is_sticky(e)) throw CudaError(e, std::string(call) + " (kernel under CUPTI profiling)", true);
  cupti_check(r, call);
}

std::mutex& profiler_mutex() {  // one session per process at a time: CUPTI allows one per context
  static std::mutex m;
  return m;
}

// The session a `keep_session` collection left enabled, and its context; under profiler_mutex.
// Never destroyed at exit: by then the context may be gone, and the process takes the profiler
// with it.
struct KeptSession {
  CUcontext ctx = nullptr;
  std::unique_ptr<RangeSession> session;
};
KeptSession& kept_session() {
  static KeptSession* k = new KeptSession;
  return *k;
}
// The kept session when it is `ctx`'s, else none (one of another context is disabled first).
std::unique_ptr<RangeSession> take_kept_session(CUcontext ctx) {
  KeptSession& k = kept_session();
  std::unique_ptr<RangeSession> s = std::move(k.session);
  const bool ours = k.ctx == ctx;
  k.ctx = nullptr;
  if (!ours) s.reset();
  return s;
}
bool keep_sessions_allowed() {
  const char* e = std::getenv("EVO_METRICS_KEEP_SESSION");
  return !(e && std::string(e) == "0");
}

HostPlan& cached_plan(const std::string& chip, CUcontext ctx, const std::vector<std::string>& names) {
  // Deliberately never freed: destroying host objects during static destruction would race
  // cudart's own teardown, and the process ends anyway.
  static auto* cache = new std::map<std::pair<std::string, std::vector<std::string>>, std::unique_ptr<HostPlan>>;
  auto key = std::make_pair(chip, names);
  auto it = cache->find(key);
  if (it == cache->end()) it = cache->emplace(key, build_plan(chip, counter_availability(ctx), names)).first;
  return *it->second;
}

void add_derived(MetricsResult& r) {
  auto c = r.values.find(kConflictsLd), w = r.values.find(kWavefrontsLd);
  if (c == r.values.end() || w == r.values.end()) return;
  r.values[kBankConflictPct] = w->second > 0 ? 100.0 * c->second / w->second : 0.0;
}

}  // namespace

const std::vector<std::string>& default_metric_names() {
  static const std::vector<std::string> names{kDuration,  kSmBusy,      kIpc,          kTensorPipe,
                                              kDramRead,  kDramWrite,   kDramThroughput, kConflictsLd,
                                              kConflictsSt, kWavefrontsLd, kWavefrontsSt, kOccupancy};
  return names;
}

MetricPlan plan_metrics(const std::string& chip, const std::vector<std::string>& names) {
  MetricPlan out;
  try {
    auto plan = build_plan(chip, {}, names);
    out.collect = plan->collect;
    out.unknown = plan->unknown;
    out.passes = plan->passes;
  } catch (const Unavailable& u) {
    out.error = u.why;
  }
  return out;
}

CombinedRanges combine_ranges(const std::vector<std::map<std::string, double>>& ranges) {
  CombinedRanges out;
  if (ranges.empty()) return out;
  if (ranges.size() == 1) {
    out.values = ranges.front();
    return out;
  }
  std::vector<double> weight(ranges.size(), 1.0);
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    auto d = ranges[i].find(kDuration);
    if (d == ranges[i].end() || !(d->second > 0)) {
      out.equal_weights = true;
      break;
    }
    weight[i] = d->second;
  }
  if (out.equal_weights) std::fill(weight.begin(), weight.end(), 1.0);
  auto ends_with = [](const std::string& s, const char* tail) {
    const std::size_t n = std::strlen(tail);
    return s.size() >= n && s.compare(s.size() - n, n, tail) == 0;
  };
  for (const auto& [name, first] : ranges.front()) {
    bool everywhere = true;
    for (const auto& r : ranges) everywhere = everywhere && r.count(name);
    if (!everywhere) continue;
    double v = 0;
    if (ends_with(name, ".sum")) {
      for (const auto& r : ranges) v += r.at(name);
    } else if (ends_with(name, ".max")) {
      v = first;
      for (const auto& r : ranges) v = std::max(v, r.at(name));
    } else if (ends_with(name, ".min")) {
      v = first;
      for (const auto& r : ranges) v = std::min(v, r.at(name));
    } else {
      double w = 0;
      for (std::size_t i = 0; i < ranges.size(); ++i) v += weight[i] * ranges[i].at(name), w += weight[i];
      v /= w;
    }
    out.values[name] = v;
  }
  return out;
}

// EVO_METRICS_TIMES=FILE: one JSON line a collection, its wall seconds by step, to see where a
// metrics pass's time goes (docs/results/scale5). Appended, so the workers of a run may share it.
class StepClock {
 public:
  StepClock() : file_(std::getenv("EVO_METRICS_TIMES")), t_(std::chrono::steady_clock::now()) {}
  void mark(const char* step) {
    if (!file_ || !*file_) return;
    const auto now = std::chrono::steady_clock::now();
    line_ += std::string(line_.empty() ? "{" : ", ") + "\"" + step + "\": " +
             std::to_string(std::chrono::duration<double>(now - t_).count());
    t_ = now;
  }
  // Inside the passes: seconds added up under `step` over every pass, written at the end.
  void add(const std::string& step) {
    if (!file_ || !*file_) return;
    const auto now = std::chrono::steady_clock::now();
    last_ = std::chrono::duration<double>(now - within_t_).count();
    within_[step] += last_;
    within_t_ = now;
  }
  // The last add's seconds also under `step` (one pass's share of a step summed over passes).
  void add_also(const std::string& step) {
    if (!file_ || !*file_) return;
    within_[step] += last_;
  }
  void begin_within() { within_t_ = std::chrono::steady_clock::now(); }
  ~StepClock() {
    if (!file_ || !*file_ || line_.empty()) return;
    for (const auto& [step, seconds] : within_) line_ += std::string(", \"") + step + "\": " + std::to_string(seconds);
    if (FILE* f = std::fopen(file_, "a")) {  // a diagnostic: never the candidate's failure
      std::fprintf(f, "%s}\n", line_.c_str());
      std::fclose(f);
    }
  }

 private:
  const char* file_;
  std::chrono::steady_clock::time_point t_, within_t_;
  std::string line_;
  std::map<std::string, double> within_;  // the passes' steps: before_pass, start, launch, stop
  double last_ = 0;
};

bool metrics_user_replay() {
  const char* e = std::getenv("EVO_METRICS_REPLAY");
  return !(e && std::string(e) == "kernel");
}

void prepare_metrics(const std::vector<std::string>& names) {
  const auto& wanted = names.empty() ? default_metric_names() : names;
  std::lock_guard<std::mutex> lock(profiler_mutex());
  try {
    CurrentContext cc = current_context();
    initialize_profiler();
    check_device_supported(cc.device);
    cached_plan(chip_name(cc.device), cc.ctx, wanted);
  } catch (const Unavailable&) {
    // Said by the collection that needs them, with the same cause.
  }
}

bool metrics_session_kept() {
  std::lock_guard<std::mutex> lock(profiler_mutex());
  return kept_session().session != nullptr;
}

void end_metrics_session() {
  std::lock_guard<std::mutex> lock(profiler_mutex());
  KeptSession& k = kept_session();
  k.session.reset();
  k.ctx = nullptr;
}

namespace {

// One collection over `units` (collect_metrics for one, collect_metrics_batch for several): one
// configuration and one Start/Stop a pass for all of them, each unit's kernels its own ranges.
std::vector<MetricsResult> collect_units(const std::vector<std::string>& names, const std::vector<MetricsUnit>& units,
                                         cudaStream_t stream, std::optional<std::size_t> only, bool keep_session) {
  std::vector<MetricsResult> out(units.size());
  const auto& wanted = names.empty() ? default_metric_names() : names;
  std::lock_guard<std::mutex> lock(profiler_mutex());
  StepClock clock;
  try {
    CurrentContext cc = current_context();
    initialize_profiler();
    clock.mark("setup_initialize");
    check_device_supported(cc.device);
    const std::string chip = chip_name(cc.device);
    HostPlan& plan = cached_plan(chip, cc.ctx, wanted);
    for (auto& r : out) r.unavailable = plan.unknown;
    if (plan.collect.empty()) throw Unavailable{"none of the " + std::to_string(wanted.size()) + " metrics exists on " + chip};
    auto metric_ptrs = c_names(plan.collect);
    clock.mark("setup");

    // A session the last collection kept (nothing was timed since: see metrics.h) skips the
    // enable, and with it the first Start's cost (150-170 ms on an H100; docs/results/scale7).
    std::unique_ptr<RangeSession> session_holder = take_kept_session(cc.ctx);
    const bool reused = session_holder != nullptr;
    if (!session_holder) session_holder = std::make_unique<RangeSession>(cc.ctx);
    clock.mark(reused ? "enable_kept" : "enable");
    // The counter-data image: room for max_ranges() ranges of these metrics.
    CUpti_RangeProfiler_GetCounterDataSize_Params sz{};
    sz.structSize = CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE;
    sz.pRangeProfilerObject = session_holder->get();
    sz.pMetricNames = metric_ptrs.data();
    sz.numMetrics = metric_ptrs.size();
    const std::size_t ranges_room = max_ranges();
    sz.maxNumOfRanges = ranges_room;
    sz.maxNumRangeTreeNodes = ranges_room;
    EVO_CUPTI(cuptiRangeProfilerGetCounterDataSize(&sz));
    std::vector<std::uint8_t> data(sz.counterDataSize);
    CUpti_RangeProfiler_CounterDataImage_Initialize_Params init{};
    init.structSize = CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE;
    init.pRangeProfilerObject = session_holder->get();
    init.counterDataSize = data.size();
    init.pCounterData = data.data();
    EVO_CUPTI(cuptiRangeProfilerCounterDataImageInitialize(&init));

    // Auto range: each kernel is a range. User replay (the default): the units run once per pass,
    // each after its `before` (the worker's restore and L2 flush), so every pass sees the cold
    // cache FAST times. Kernel replay (EVO_METRICS_REPLAY=kernel): CUPTI replays each kernel
    // itself, restoring the device memory between passes, which leaves the inputs in L2 (an 8 MB
    // copy read 23 KB from DRAM, docs/results/scale5 §6). Both cost about the same. Should the
    // device refuse user replay, kernel replay is used; the loop is bounded in case CUPTI never
    // says it is done.
    const bool user_replay = metrics_user_replay();
    CUpti_RangeProfiler_SetConfig_Params sc{};
    sc.structSize = CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE;
    sc.pRangeProfilerObject = session_holder->get();
    sc.configSize = plan.config.size();
    sc.pConfig = plan.config.data();
    sc.counterDataImageSize = data.size();
    sc.pCounterDataImage = data.data();
    sc.range = CUPTI_AutoRange;
    sc.replayMode = user_replay ? CUPTI_UserReplay : CUPTI_KernelReplay;
    sc.maxRangesPerPass = ranges_room;
    sc.numNestingLevels = 1;
    sc.minNestingLevel = 1;
    sc.passIndex = 0;
    sc.targetNestingLevel = 1;
    CUptiResult configured = cuptiRangeProfilerSetConfig(&sc);
    if (configured != CUPTI_SUCCESS && reused) {
      // A kept session that will not take a new configuration: a fresh one, as without keeping
      // (the old one disabled first: one session a context).
      session_holder.reset();
      session_holder = std::make_unique<RangeSession>(cc.ctx);
      init.pRangeProfilerObject = sc.pRangeProfilerObject = session_holder->get();
      EVO_CUPTI(cuptiRangeProfilerCounterDataImageInitialize(&init));
      configured = cuptiRangeProfilerSetConfig(&sc);
    }
    if (configured != CUPTI_SUCCESS) {
      if (!user_replay) cupti_check(configured, "cuptiRangeProfilerSetConfig");
      sc.replayMode = CUPTI_KernelReplay;
      EVO_CUPTI(cuptiRangeProfilerSetConfig(&sc));
    }
    RangeSession& session = *session_holder;
    clock.mark("config");
    std::size_t launches = 0;
    clock.begin_within();
    for (;;) {
      // The first unit's `before` outside the pass, as a unit profiled alone has it; the others'
      // between two units (a restore and a memset: no kernel, so no range of their own).
      if (units.front().before) units.front().before();
      clock.add("pass_before");
      CUpti_RangeProfiler_Start_Params st{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE, nullptr, session.get()};
      EVO_CUPTI(cuptiRangeProfilerStart(&st));
      clock.add("pass_start");
      clock.add_also("pass_start_" + std::to_string(launches + 1));
      for (std::size_t u = 0; u < units.size(); ++u) {
        if (u > 0 && units[u].before) units[u].before();
        units[u].launch();
      }
      ++launches;
      clock.add("pass_launch");
      CUpti_RangeProfiler_Stop_Params sp{};
      sp.structSize = CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE;
      sp.pRangeProfilerObject = session.get();
      check_during_launch(cuptiRangeProfilerStop(&sp), "cuptiRangeProfilerStop", stream);
      clock.add("pass_stop");
      if (sp.isAllPassSubmitted) break;
      if (launches > plan.passes)
        throw Unavailable{"CUPTI still wants passes after " + std::to_string(launches) + " launches (" +
                          std::to_string(plan.passes) + " planned)"};
    }
    clock.mark("passes");
    CUpti_RangeProfiler_DecodeData_Params dd{};
    dd.structSize = CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE;
    dd.pRangeProfilerObject = session.get();
    check_during_launch(cuptiRangeProfilerDecodeData(&dd), "cuptiRangeProfilerDecodeData", stream);

    CUpti_RangeProfiler_GetCounterDataInfo_Params info{};
    info.structSize = CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE;
    info.pCounterDataImage = data.data();
    info.counterDataImageSize = data.size();
    EVO_CUPTI(cuptiRangeProfilerGetCounterDataInfo(&info));
    if (info.numTotalRanges == 0) throw Unavailable{"no kernel ran inside the profiled launch"};

    // Each kernel is a range, in launch order. Alone, a unit's are all it ran; in a batch, each
    // unit's `kernels` in turn, and they must add up to what ran.
    const std::size_t kernels = info.numTotalRanges + dd.numOfRangeDropped;
    std::vector<std::size_t> first(units.size(), 0), count(units.size(), info.numTotalRanges);
    if (units.size() > 1) {
      std::size_t at = 0;
      for (std::size_t u = 0; u < units.size(); ++u) first[u] = at, count[u] = units[u].kernels, at += units[u].kernels;
      if (at != kernels || dd.numOfRangeDropped)
        throw Unavailable{"the batch ran " + std::to_string(kernels) + " kernels where its " + std::to_string(units.size()) +
                          " units launch " + std::to_string(at)};
    }
    auto range_values = [&](std::size_t k) {
      std::vector<double> values(plan.collect.size(), 0.0);
      CUpti_Profiler_Host_EvaluateToGpuValues_Params ev{};
      ev.structSize = CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE;
      ev.pHostObject = plan.host->get();
      ev.pCounterDataImage = data.data();
      ev.counterDataImageSize = data.size();
      ev.rangeIndex = k;
      ev.ppMetricNames = metric_ptrs.data();
      ev.numMetrics = metric_ptrs.size();
      ev.pMetricValues = values.data();
      EVO_CUPTI(cuptiProfilerHostEvaluateToGpuValues(&ev));
      std::map<std::string, double> range;
      for (std::size_t i = 0; i < values.size(); ++i) {
        // NaN (a ratio over nothing) is not a figure: it cannot be stored as JSON or compared
        // (left out here, it is listed as unavailable below).
        if (std::isfinite(values[i])) range[plan.collect[i]] = values[i];
      }
      return range;
    };
    for (std::size_t u = 0; u < units.size(); ++u) {
      MetricsResult& r = out[u];
      const std::size_t unit_kernels = units.size() > 1 ? count[u] : kernels;
      if (only && *only >= count[u])
        throw Unavailable{"the profile names launch " + std::to_string(*only) + " (gates.metrics.launch), and the unit ran " +
                          std::to_string(unit_kernels) + " kernel" + (unit_kernels == 1 ? "" : "s") +
                          (dd.numOfRangeDropped ? " (" + std::to_string(dd.numOfRangeDropped) + " beyond the profiler's room)" : "")};
      const std::size_t from = first[u] + (only ? *only : 0), to = only ? from + 1 : first[u] + count[u];
      std::vector<std::map<std::string, double>> ranges;
      for (std::size_t k = from; k < to; ++k) ranges.push_back(range_values(k));
      const CombinedRanges combined = combine_ranges(ranges);
      r.values = combined.values;
      for (const auto& name : plan.collect)
        if (!r.values.count(name) &&
            std::find(r.unavailable.begin(), r.unavailable.end(), name) == r.unavailable.end())
          r.unavailable.push_back(name);
      add_derived(r);
      r.outcome = Outcome::Passed;
      std::vector<std::string> notes;
      if (!r.unavailable.empty()) notes.push_back(std::to_string(r.unavailable.size()) + " metric(s) unavailable on " + chip);
      if (only && unit_kernels > 1)
        notes.push_back("the unit ran " + std::to_string(unit_kernels) + " kernels; figures are launch " + std::to_string(*only) +
                        "'s (gates.metrics.launch)");
      else if (unit_kernels > 1)
        notes.push_back("the unit ran " + std::to_string(unit_kernels) + " kernels; figures cover all of them (sums added, " +
                        (combined.equal_weights ? "rates averaged" : "rates weighted by each kernel's duration") + ")");
      if (dd.numOfRangeDropped)
        notes.push_back(std::to_string(dd.numOfRangeDropped) + " kernels beyond the profiler's " + std::to_string(ranges_room) +
                        " ranges are not counted");
      for (std::size_t i = 0; i < notes.size(); ++i) r.reason += (i ? "; " : "") + notes[i];
    }
    clock.mark("decode");
    if (keep_session && keep_sessions_allowed()) {
      kept_session().ctx = cc.ctx;
      kept_session().session = std::move(session_holder);
    } else {
      session_holder.reset();
      clock.mark("disable");
    }
  } catch (const Unavailable& u) {
    for (auto& r : out) {
      r.outcome = Outcome::Skipped;
      r.values.clear();
      r.reason = "metrics unavailable: " + u.why;
    }
  }
  return out;
}

}  // namespace

MetricsResult collect_metrics(const std::vector<std::string>& names, const std::function<void()>& launch,
                              cudaStream_t stream, std::optional<std::size_t> only,
                              const std::function<void()>& before_pass, bool keep_session) {
  return collect_units(names, {MetricsUnit{launch, before_pass, 0}}, stream, only, keep_session).front();
}

std::vector<MetricsResult> collect_metrics_batch(const std::vector<std::string>& names, const std::vector<MetricsUnit>& units,
                                                 cudaStream_t stream, bool keep_session) {
  if (units.empty()) return {};
  for (const auto& u : units)
    if (u.kernels == 0 && units.size() > 1) throw UserError("collect_metrics_batch: a unit of unknown kernel count");
  return collect_units(names, units, stream, std::nullopt, keep_session);
}

MetricGateVerdict metric_gate(const MetricsResult& m, const std::vector<MetricThreshold>& thresholds) {
  MetricGateVerdict v;
  if (thresholds.empty()) {
    v.reason = "no metric thresholds in the profile";
    return v;
  }
  if (m.outcome != Outcome::Passed) {
    v.reason = m.reason.empty() ? "metrics were not collected" : m.reason;
    return v;
  }
  // A figure outside its bounds rejects even when another thresholded metric is missing: the
  // candidate fails the gate whatever the missing one says. Only then does a gap mean Skipped.
  std::vector<std::string> missing;
  for (const auto& t : thresholds) {
    auto value = metric_value(m, t.metric);
    if (!value) {
      missing.push_back(t.metric);
      continue;
    }
    if (t.min && *value < *t.min) {
      v.outcome = Outcome::Rejected;
      v.reason = t.metric + " = " + number(*value) + ", below the minimum " + number(*t.min);
      return v;
    }
    if (t.max && *value > *t.max) {
      v.outcome = Outcome::Rejected;
      v.reason = t.metric + " = " + number(*value) + ", above the maximum " + number(*t.max);
      return v;
    }
  }
  if (!missing.empty()) {
    v.reason = "metric unavailable: " + missing.front() +
               (missing.size() > 1 ? " (and " + std::to_string(missing.size() - 1) + " more)" : "");
    return v;
  }
  v.outcome = Outcome::Passed;
  v.reason = std::to_string(thresholds.size()) + " metric threshold" + (thresholds.size() == 1 ? "" : "s") + " met";
  return v;
}

}  // namespace evo
