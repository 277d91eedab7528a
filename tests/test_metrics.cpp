// Hardware metrics (gates/metrics.h). On any machine: the metric gate's verdicts, the derived
// bank_conflict_pct, the GH100 metric names checked by CUPTI's host API, and "metrics unavailable"
// without a device. On a GPU: small kernels compiled by evo's own NVRTC path, profiled through
// the range profiler, with figures that can be predicted (tensor pipe busy or idle, DRAM bytes a
// copy must move, 32-way bank conflicts).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "engine/compiler.h"
#include "engine/device.h"
#include "engine/launch.h"
#include "gates/fast.h"
#include "gates/metrics.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kTensorPipe = "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active";
constexpr const char* kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr const char* kSmThroughput = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kConflictsLd = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum";
constexpr const char* kWavefrontsLd = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum";

MetricsResult collected(std::map<std::string, double> values) {
  MetricsResult m;
  m.outcome = Outcome::Passed;
  m.values = std::move(values);
  return m;
}

// ---- metric_gate (CPU) ------------------------------------------------------------------------

TEST(MetricGate, PassesWhenEveryFigureIsInsideItsBounds) {
  auto m = collected({{kTensorPipe, 55.0}, {kOccupancy, 30.0}});
  auto v = metric_gate(m, {{kTensorPipe, 40.0, std::nullopt}, {kOccupancy, 10.0, 90.0}});
  EXPECT_EQ(v.outcome, Outcome::Passed) << v.reason;
}

TEST(MetricGate, RejectsBelowMinimumNamingMetricAndBothFigures) {
  auto m = collected({{kTensorPipe, 12.5}});
  auto v = metric_gate(m, {{kTensorPipe, 40.0, std::nullopt}});
  EXPECT_EQ(v.outcome, Outcome::Rejected);
  EXPECT_NE(v.reason.find(kTensorPipe), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("12.5"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("40"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("minimum"), std::string::npos) << v.reason;
}

TEST(MetricGate, RejectsAboveMaximum) {
  auto m = collected({{kOccupancy, 95.25}});
  auto v = metric_gate(m, {{kOccupancy, 10.0, 90.0}});
  EXPECT_EQ(v.outcome, Outcome::Rejected);
  EXPECT_NE(v.reason.find("95.25"), std::string::npos) << v.reason;
  EXPECT_NE(v.reason.find("maximum 90"), std::string::npos) << v.reason;
}

TEST(MetricGate, SkippedWithoutThresholds) {
  auto v = metric_gate(collected({{kTensorPipe, 1.0}}), {});
  EXPECT_EQ(v.outcome, Outcome::Skipped);
  EXPECT_FALSE(v.reason.empty());
}

TEST(MetricGate, SkippedWhenMetricsWereUnavailable) {
  MetricsResult m;  // what collect_metrics returns where profiling is not permitted
  m.outcome = Outcome::Skipped;
  m.reason = "metrics unavailable: cuptiProfilerGetCounterAvailability: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  auto v = metric_gate(m, {{kTensorPipe, 40.0, std::nullopt}});
  EXPECT_EQ(v.outcome, Outcome::Skipped);
  EXPECT_EQ(v.reason, m.reason);
}

TEST(MetricGate, SkippedNeverPassedWhenAThresholdedMetricIsMissing) {
  auto m = collected({{kOccupancy, 50.0}});
  m.unavailable = {kTensorPipe};
  auto v = metric_gate(m, {{kOccupancy, 10.0, std::nullopt}, {kTensorPipe, 40.0, std::nullopt}});
  EXPECT_EQ(v.outcome, Outcome::Skipped);
  EXPECT_NE(v.reason.find(kTensorPipe), std::string::npos) << v.reason;
}

TEST(MetricGate, RejectsOnAPresentMetricEvenWhenAnotherIsMissing) {
  auto m = collected({{kOccupancy, 5.0}});
  auto v = metric_gate(m, {{kTensorPipe, 40.0, std::nullopt}, {kOccupancy, 10.0, std::nullopt}});
  EXPECT_EQ(v.outcome, Outcome::Rejected);
  EXPECT_NE(v.reason.find(kOccupancy), std::string::npos) << v.reason;
}

// The seeds' "bank conflicts < 5 % of shared loads", derived from the two CUPTI counters.
TEST(MetricGate, BankConflictPctIsConflictsOverLoadWavefronts) {
  auto m = collected({{kConflictsLd, 30.0}, {kWavefrontsLd, 200.0}});
  ASSERT_TRUE(metric_value(m, kBankConflictPct).has_value());
  EXPECT_DOUBLE_EQ(*metric_value(m, kBankConflictPct), 15.0);
  auto v = metric_gate(m, {{kBankConflictPct, std::nullopt, 5.0}});
  EXPECT_EQ(v.outcome, Outcome::Rejected);
  EXPECT_NE(v.reason.find("bank_conflict_pct = 15"), std::string::npos) << v.reason;
  // No shared loads at all: nothing was wasted, 0 %, and the gate passes.
  auto none = collected({{kConflictsLd, 0.0}, {kWavefrontsLd, 0.0}});
  EXPECT_EQ(metric_gate(none, {{kBankConflictPct, std::nullopt, 5.0}}).outcome, Outcome::Passed);
  // Without its inputs the derived metric is missing, so the gate cannot judge.
  EXPECT_EQ(metric_gate(collected({{kDuration, 1.0}}), {{kBankConflictPct, std::nullopt, 5.0}}).outcome,
            Outcome::Skipped);
}

// ---- CUPTI host API, no GPU needed ------------------------------------------------------------

// ---- a unit of several launches (CPU) -----------------------------------------------------------

TEST(MetricRanges, SumsAddExtremesStayAndRatesWeighByDuration) {
  // Two kernels: 30 us at 80 % SM throughput, 10 us at 40 %; 3 MB and 1 MB read.
  const CombinedRanges c = combine_ranges({
      {{kDuration, 30000}, {kSmThroughput, 80}, {"dram__bytes_read.sum", 3e6}, {"x.max", 5}, {"x.min", 2}},
      {{kDuration, 10000}, {kSmThroughput, 40}, {"dram__bytes_read.sum", 1e6}, {"x.max", 7}, {"x.min", 1}},
  });
  EXPECT_FALSE(c.equal_weights);
  EXPECT_DOUBLE_EQ(c.values.at(kDuration), 40000);
  EXPECT_DOUBLE_EQ(c.values.at("dram__bytes_read.sum"), 4e6);
  EXPECT_DOUBLE_EQ(c.values.at(kSmThroughput), 70);  // (30 x 80 + 10 x 40) / 40, not the plain mean 60
  EXPECT_DOUBLE_EQ(c.values.at("x.max"), 7);
  EXPECT_DOUBLE_EQ(c.values.at("x.min"), 1);
}

TEST(MetricRanges, WithoutDurationsRatesAreAPlainMeanAndAGapLeavesTheMetricOut) {
  const CombinedRanges c = combine_ranges({{{kOccupancy, 50}, {kConflictsLd, 10}, {kWavefrontsLd, 100}},
                                           {{kOccupancy, 30}, {kConflictsLd, 30}}});
  EXPECT_TRUE(c.equal_weights);
  EXPECT_DOUBLE_EQ(c.values.at(kOccupancy), 40);
  EXPECT_DOUBLE_EQ(c.values.at(kConflictsLd), 40);
  EXPECT_FALSE(c.values.count(kWavefrontsLd)) << "a figure from one kernel only is no figure of the unit";
  const CombinedRanges one = combine_ranges({{{kOccupancy, 50}}});
  EXPECT_DOUBLE_EQ(one.values.at(kOccupancy), 50);
  EXPECT_TRUE(combine_ranges({}).values.empty());
}

TEST(MetricPlan, DefaultNamesExistOnGH100) {
  auto plan = plan_metrics("GH100", default_metric_names());
  ASSERT_TRUE(plan.error.empty()) << plan.error;
  EXPECT_TRUE(plan.unknown.empty()) << "unknown on GH100: " << plan.unknown.front();
  EXPECT_EQ(plan.collect.size(), default_metric_names().size());
  std::printf("[metrics] GH100, default list: %zu metrics, %zu passes\n", plan.collect.size(), plan.passes);
  // Two passes: every candidate with metrics relaunches its unit once a pass. sm__throughput
  // alone needs 8 on GH100 (CUPTI_NVRTC.md §3), which is why the list goes without it.
  EXPECT_EQ(plan.passes, 2u);
  EXPECT_EQ(plan_metrics("GH100", {"sm__throughput.avg.pct_of_peak_sustained_elapsed"}).passes, 8u);
}

TEST(MetricPlan, UnknownNameIsListedAndDerivedNameExpands) {
  auto plan = plan_metrics("GH100", {kDuration, "evo__no_such_metric.sum", kBankConflictPct});
  ASSERT_TRUE(plan.error.empty()) << plan.error;
  EXPECT_EQ(plan.unknown, std::vector<std::string>{"evo__no_such_metric.sum"});
  EXPECT_EQ(plan.collect, (std::vector<std::string>{kDuration, kConflictsLd, kWavefrontsLd}));
  EXPECT_EQ(plan.passes, 1u);  // time + smem counters fit one pass (CUPTI_NVRTC.md §3)
}

TEST(MetricPlan, BadChipIsAnErrorNotAThrow) {
  auto plan = plan_metrics("NOT_A_CHIP", default_metric_names());
  EXPECT_FALSE(plan.error.empty());
  EXPECT_TRUE(plan.collect.empty());
}

TEST(MetricCollect, WithoutDeviceSaysUnavailableAndNeverLaunches) {
  if (probe_device(0).present) GTEST_SKIP() << "a CUDA device is present: the GPU tests cover this machine";
  bool launched = false;
  auto m = collect_metrics(default_metric_names(), [&] { launched = true; }, nullptr);
  EXPECT_EQ(m.outcome, Outcome::Skipped);
  EXPECT_EQ(m.reason.rfind("metrics unavailable: ", 0), 0u) << m.reason;
  EXPECT_TRUE(m.values.empty());
  EXPECT_FALSE(launched);
}

// ---- on a GPU ---------------------------------------------------------------------------------

// One warp per block multiplies a 16x16 half tile by itself `reps` times on the tensor cores; a
// dependent chain, so nothing can be folded away.
constexpr const char* kWmmaSource = R"(
#include <mma.h>
using namespace nvcuda;
extern "C" __global__ void wmma_loop(const half* a, float* c, int reps) {
  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
  wmma::fill_fragment(acc, 0.0f);
  wmma::load_matrix_sync(fa, a, 16);
  wmma::load_matrix_sync(fb, a, 16);
  for (int i = 0; i < reps; ++i) wmma::mma_sync(acc, fa, fb, acc);
  wmma::store_matrix_sync(c + blockIdx.x * 256, acc, 16, wmma::mem_row_major);
}
)";

// A grid-stride float4 copy: reads exactly n*16 bytes once, writes them once, no shared memory.
constexpr const char* kCopySource = R"(
extern "C" __global__ void copy_f4(const float4* in, float4* out, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    out[i] = in[i];
}
)";

// Each thread of a one-warp block reads shared word (t * stride + r) mod 1056. 1056 = 33 * 32, so
// the bank is (t * stride + r) mod 32: stride 32 puts the whole warp in one bank (32-way
// conflicts, 31 extra wavefronts per load), stride 1 gives 32 distinct banks (none).
constexpr const char* kSmemSource = R"(
extern "C" __global__ void smem_stride(float* out, int stride, int reps) {
  __shared__ float s[32 * 33];
  for (int i = threadIdx.x; i < 32 * 33; i += blockDim.x) s[i] = (float)i;
  __syncthreads();
  float acc = 0.f;
  for (int r = 0; r < reps; ++r) acc += s[(threadIdx.x * stride + r) % (32 * 33)];
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
)";

class MetricGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    device_ = probe_device(0);
    if (!device_.present) GTEST_SKIP() << "no CUDA device: " << device_.error;
    std::string tmpl = (fs::temp_directory_path() / "evo-metrics-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
    cache_ = std::make_unique<CompileCache>(dir_ / "cache");
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
  }
  void TearDown() override {
    if (stream_) cudaStreamDestroy(stream_);
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

  // Compiles `source` with evo's NVRTC path for this device and loads entry `name`.
  Kernel load(const std::string& source, const std::string& name) {
    fs::path file = dir_ / (name + ".cu");
    std::ofstream(file) << source;
    CompileRequest req;
    req.source_path = file.string();
    req.name_expression = name;
    req.arch = device_.cc;
    Build b = compile(req, *cache_);
    EXPECT_TRUE(b.ok) << b.log;
    if (!b.ok) return {};
    modules_.push_back(Module::load(b.cubin_path));
    return modules_.back().kernel(b.lowered_name);
  }

  LaunchGeometry geometry(std::uint32_t blocks, std::uint32_t threads) {
    LaunchGeometry g;
    g.grid = {blocks, 1, 1};
    g.block = {threads, 1, 1};
    return g;
  }

  DeviceInfo device_;
  fs::path dir_;
  std::unique_ptr<CompileCache> cache_;
  std::vector<Module> modules_;
  cudaStream_t stream_ = nullptr;
};

// Prints every figure, so a GPU run's log is the record for docs/results/metrics.md.
void print(const char* what, const MetricsResult& m) {
  std::printf("[metrics] %s: outcome %s, reason '%s'\n", what, outcome_name(m.outcome), m.reason.c_str());
  for (const auto& [k, v] : m.values) std::printf("[metrics]   %-75s %.6g\n", k.c_str(), v);
  for (const auto& n : m.unavailable) std::printf("[metrics]   unavailable: %s\n", n.c_str());
}

// copy_f4's two buffers of `bytes` (the input all 1-bytes) and its arguments, each way.
struct CopyBuffers {
  explicit CopyBuffers(std::size_t bytes) : in(bytes), out(bytes), pi(in.get()), po(out.get()), n(static_cast<long long>(bytes / 16)) {
    ok = cudaMemset(in.get(), 1, bytes) == cudaSuccess;
  }
  CopyBuffers(const CopyBuffers&) = delete;  // the argument lists point into it
  CopyBuffers& operator=(const CopyBuffers&) = delete;
  DeviceBuffer in, out;
  void* pi;
  void* po;
  long long n;
  bool ok = false;
  void* there[3] = {&pi, &po, &n};
  void* back[3] = {&po, &pi, &n};
};

TEST_F(MetricGpu, WmmaKernelKeepsTheTensorPipeBusy) {
  Kernel k = load(kWmmaSource, "wmma_loop");
  ASSERT_TRUE(k.valid());
  const std::uint32_t blocks = static_cast<std::uint32_t>(device_.sm_count) * 8;
  DeviceBuffer a(256 * 2), c(std::size_t(blocks) * 256 * 4);
  ASSERT_EQ(cudaMemset(a.get(), 0, a.bytes()), cudaSuccess);
  void* pa = a.get();
  void* pc = c.get();
  int reps = 4096;
  void* args[] = {&pa, &pc, &reps};
  auto m = collect_metrics(default_metric_names(), [&] { k.launch(geometry(blocks, 32), args, stream_); }, stream_);
  print("wmma_loop", m);
  ASSERT_EQ(m.outcome, Outcome::Passed) << m.reason;
  EXPECT_TRUE(m.unavailable.empty()) << "first unavailable: " << m.unavailable.front();
  EXPECT_GT(m.values.at(kDuration), 0.0);
  EXPECT_GT(m.values.at(kTensorPipe), 0.5);
  EXPECT_GT(m.values.at(kOccupancy), 0.0);
}

TEST_F(MetricGpu, CopyKernelMovesItsBytesThroughDramWithAnIdleTensorPipe) {
  Kernel k = load(kCopySource, "copy_f4");
  ASSERT_TRUE(k.valid());
  // 256 MB each way: five times the H100's 50 MB L2, so the reads must come from DRAM.
  const std::size_t bytes = std::size_t(256) << 20;
  CopyBuffers copy(bytes);
  ASSERT_TRUE(copy.ok);
  const std::uint32_t blocks = static_cast<std::uint32_t>(device_.sm_count) * 16;
  auto m = collect_metrics(default_metric_names(), [&] { k.launch(geometry(blocks, 256), copy.there, stream_); }, stream_);
  print("copy_f4", m);
  ASSERT_EQ(m.outcome, Outcome::Passed) << m.reason;
  EXPECT_TRUE(m.unavailable.empty()) << "first unavailable: " << m.unavailable.front();
  EXPECT_GT(m.values.at(kDuration), 0.0);
  EXPECT_LT(m.values.at(kTensorPipe), 0.1);
  const double read = m.values.at("dram__bytes_read.sum");
  EXPECT_GT(read, double(bytes) / 2);
  EXPECT_LT(read, double(bytes) * 2);
  EXPECT_GT(m.values.at("dram__bytes_write.sum"), 0.0);
  EXPECT_GT(m.values.at(metric::kSmBusy), 0.0);
  EXPECT_GT(m.values.at(metric::kDramThroughput), 1.0);  // a copy of 16 B a thread moves DRAM
  // No shared memory at all: the derived ratio is there and 0.
  ASSERT_TRUE(m.values.count(kBankConflictPct));
  EXPECT_EQ(m.values.at(kBankConflictPct), 0.0);
}

// An input that fits in L2 (8 MB of the H100's 50), just written by a memset: relaunched once per
// pass (user replay), each pass finds it in L2 and counts next to no DRAM reads. Flushed before
// each pass, as the worker does, the reads are the kernel's cold-cache bytes, as FAST's flushed
// launches see them. (CUPTI's kernel replay, printed for the record, restores the buffers before
// each pass and so leaves them in L2 too: 23 KB of 8 MB on a 4 x H100 host, 2026-11-27.)
TEST_F(MetricGpu, AFlushBeforeEachPassCountsColdCacheReads) {
  Kernel k = load(kCopySource, "copy_f4");
  ASSERT_TRUE(k.valid());
  const std::size_t bytes = std::size_t(8) << 20;
  CopyBuffers copy(bytes);
  ASSERT_TRUE(copy.ok);
  const std::uint32_t blocks = static_cast<std::uint32_t>(device_.sm_count) * 4;
  auto launch = [&] { k.launch(geometry(blocks, 256), copy.there, stream_); };
  int flushes = 0;
  auto flushed = collect_metrics(default_metric_names(), launch, stream_, std::nullopt, [&] {
    ++flushes;
    flush_l2(device_.l2_bytes, stream_);
  });
  print("copy_f4 8 MB, flushed before each pass", flushed);
  ASSERT_EQ(flushed.outcome, Outcome::Passed) << flushed.reason;
  if (device_.cc == "sm_90") {  // GH100: the host API's pass count for the list
    const std::size_t passes = plan_metrics("GH100", default_metric_names()).passes;
    EXPECT_EQ(flushes, metrics_user_replay() ? static_cast<int>(passes) : 1);
  }
  const double cold = flushed.values.at("dram__bytes_read.sum");
  EXPECT_GT(cold, double(bytes) * 0.9);
  EXPECT_LT(cold, double(bytes) * 1.5);
  auto warm = collect_metrics(default_metric_names(), launch, stream_);
  print("copy_f4 8 MB, not flushed", warm);
  ASSERT_EQ(warm.outcome, Outcome::Passed) << warm.reason;
  if (metrics_user_replay()) {
    EXPECT_LT(warm.values.at("dram__bytes_read.sum"), double(bytes) / 4);
  }
  ASSERT_EQ(setenv("EVO_METRICS_REPLAY", "kernel", 1), 0);
  auto kernel_replay = collect_metrics(default_metric_names(), launch, stream_);
  unsetenv("EVO_METRICS_REPLAY");
  print("copy_f4 8 MB, kernel replay", kernel_replay);
  EXPECT_EQ(kernel_replay.outcome, Outcome::Passed) << kernel_replay.reason;
}

// The run's end profiles its best one after another in a session kept enabled between them
// (keep_session): each collection counts its own launch alone, as a fresh session does, however
// many came before it in the session; ended, the next one starts a fresh session.
TEST_F(MetricGpu, AKeptSessionCountsEachCollectionAlone) {
  Kernel k = load(kCopySource, "copy_f4");
  ASSERT_TRUE(k.valid());
  CopyBuffers small(std::size_t(8) << 20), large(std::size_t(64) << 20);
  ASSERT_TRUE(small.ok && large.ok);
  const std::uint32_t blocks = static_cast<std::uint32_t>(device_.sm_count) * 4;
  auto flushed = [&] { flush_l2(device_.l2_bytes, stream_); };
  auto read_of = [&](CopyBuffers& c, bool keep) {
    auto m = collect_metrics(default_metric_names(), [&] { k.launch(geometry(blocks, 256), c.there, stream_); },
                             stream_, std::nullopt, flushed, keep);
    EXPECT_EQ(m.outcome, Outcome::Passed) << m.reason;
    return m.outcome == Outcome::Passed ? m.values.at("dram__bytes_read.sum") : -1.0;
  };
  const double fresh_small = read_of(small, false), fresh_large = read_of(large, false);
  std::vector<double> kept;
  for (int i = 0; i < 3; ++i) {
    kept.push_back(read_of(large, true));
    kept.push_back(read_of(small, true));
  }
  end_metrics_session();
  const double after = read_of(small, false);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const double want = i % 2 ? fresh_small : fresh_large;
    EXPECT_GT(kept[i], want * 0.9) << "collection " << i << " of the kept session";
    EXPECT_LT(kept[i], want * 1.1) << "collection " << i << " of the kept session";
  }
  EXPECT_GT(after, fresh_small * 0.9);
  EXPECT_LT(after, fresh_small * 1.1);
  EXPECT_GT(fresh_large, fresh_small * 6);  // 64 MB against 8 MB: the figures tell them apart
}

// A unit of two launches (a copy, then the same copy back): the DRAM bytes are both kernels',
// and naming one launch gives that one's alone (issue 37).
TEST_F(MetricGpu, AUnitOfTwoLaunchesCountsBothOrTheOneNamed) {
  Kernel k = load(kCopySource, "copy_f4");
  ASSERT_TRUE(k.valid());
  const std::size_t bytes = std::size_t(256) << 20;
  CopyBuffers copy(bytes);
  ASSERT_TRUE(copy.ok);
  const std::uint32_t blocks = static_cast<std::uint32_t>(device_.sm_count) * 16;
  auto unit = [&] {
    k.launch(geometry(blocks, 256), copy.there, stream_);
    k.launch(geometry(blocks, 256), copy.back, stream_);
  };
  auto both = collect_metrics(default_metric_names(), unit, stream_);
  auto first = collect_metrics(default_metric_names(), unit, stream_, 0);
  auto second = collect_metrics(default_metric_names(), unit, stream_, 1);
  auto none = collect_metrics(default_metric_names(), unit, stream_, 2);
  print("two copies, all", both);
  print("two copies, launch 0", first);
  print("two copies, launch 1", second);
  ASSERT_EQ(both.outcome, Outcome::Passed) << both.reason;
  ASSERT_EQ(first.outcome, Outcome::Passed) << first.reason;
  ASSERT_EQ(second.outcome, Outcome::Passed) << second.reason;
  EXPECT_NE(both.reason.find("figures cover all of them"), std::string::npos) << both.reason;
  EXPECT_NE(first.reason.find("figures are launch 0's"), std::string::npos) << first.reason;
  const double read = both.values.at("dram__bytes_read.sum"), one = first.values.at("dram__bytes_read.sum");
  EXPECT_GT(read, 1.6 * one) << "both kernels' reads";
  EXPECT_LT(read, 2.4 * one);
  // Three collections, three timings of the same copies: 1.1 % apart once on an H200 (call M).
  EXPECT_NEAR(both.values.at(kDuration), first.values.at(kDuration) + second.values.at(kDuration),
              0.03 * both.values.at(kDuration));
  EXPECT_EQ(none.outcome, Outcome::Skipped);
  EXPECT_NE(none.reason.find("launch 2"), std::string::npos) << none.reason;
}

TEST_F(MetricGpu, BankConflictPctSeparatesStridedFromLinearSharedLoads) {
  Kernel k = load(kSmemSource, "smem_stride");
  ASSERT_TRUE(k.valid());
  const std::uint32_t blocks = static_cast<std::uint32_t>(device_.sm_count);
  DeviceBuffer out(std::size_t(blocks) * 32 * 4);
  void* po = out.get();
  int reps = 1024;
  auto run = [&](int stride) {
    void* args[] = {&po, &stride, &reps};
    return collect_metrics({kBankConflictPct, kDuration}, [&] { k.launch(geometry(blocks, 32), args, stream_); },
                           stream_);
  };
  auto linear = run(1), strided = run(32);
  print("smem_stride stride 1", linear);
  print("smem_stride stride 32", strided);
  ASSERT_EQ(linear.outcome, Outcome::Passed) << linear.reason;
  ASSERT_EQ(strided.outcome, Outcome::Passed) << strided.reason;
  EXPECT_LT(linear.values.at(kBankConflictPct), 5.0);
  EXPECT_GT(strided.values.at(kBankConflictPct), 50.0);  // 31 of 32 wavefronts, less the stores
  const std::vector<MetricThreshold> seed_gate{{kBankConflictPct, std::nullopt, 5.0}};
  EXPECT_EQ(metric_gate(linear, seed_gate).outcome, Outcome::Passed);
  EXPECT_EQ(metric_gate(strided, seed_gate).outcome, Outcome::Rejected);
}

TEST_F(MetricGpu, UnknownMetricIsListedWhileTheOthersAreCollected) {
  Kernel k = load(kCopySource, "copy_f4");
  ASSERT_TRUE(k.valid());
  DeviceBuffer in(1 << 20), out(1 << 20);
  void* pi = in.get();
  void* po = out.get();
  long long n = (1 << 20) / 16;
  void* args[] = {&pi, &po, &n};
  auto m = collect_metrics({kDuration, "evo__no_such_metric.sum"},
                           [&] { k.launch(geometry(64, 256), args, stream_); }, stream_);
  print("copy_f4 with an unknown name", m);
  ASSERT_EQ(m.outcome, Outcome::Passed) << m.reason;
  EXPECT_EQ(m.unavailable, std::vector<std::string>{"evo__no_such_metric.sum"});
  EXPECT_GT(m.values.at(kDuration), 0.0);
  // The profiler is disabled again afterwards: a plain launch and sync still work.
  k.launch(geometry(64, 256), args, stream_);
  EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
}

}  // namespace
}  // namespace evo
