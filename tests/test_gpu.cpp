// The GPU gates: GREEN, FAST, sanitize, the worker's crash and hang isolation, `evo eval`.
// Gpu* suites need a CUDA device (each skips, saying why, without one) and run the real `evo`
// binary as the worker ($EVO_BINARY). The planted kernels are tests/data/templates/planted_gemm.cu
// (profile tests/data/profiles/planted.json): PLANT=1 wrong tile, 2 fault, 3 hang, 4 NaN, 5 reads
// past the end. The other suites need no GPU: buffers' encodings, output comparison, the worker's
// framing, timing statistics, the memcheck log parser, `evo eval` without a device.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "engine/buffers.h"
#include "engine/compiler.h"
#include "engine/error.h"
#include "engine/file_lock.h"
#include "engine/gpu_evaluator.h"
#include "engine/npy.h"
#include "engine/pool.h"
#include "engine/profile.h"
#include "engine/reference.h"
#include "engine/worker.h"
#include "gates/fast.h"
#include "gates/green.h"
#include "gates/sanitize.h"
#include "population/store.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;

// tests/data from the working directory (ctest and the GPU bundle run from the repository root),
// else from the source tree this binary was built from.
fs::path data(const std::string& rel) {
  fs::path here = fs::path("tests/data") / rel;
  if (fs::exists(here)) return fs::absolute(here);
  return evo::test::source_root() / "tests/data" / rel;
}
fs::path repo(const std::string& rel) {
  if (fs::exists(rel)) return fs::absolute(rel);
  return evo::test::source_root() / rel;
}

using test::evo_binary;

fs::path temp_dir(const std::string& stem) {
  std::string t = (fs::temp_directory_path() / (stem + "-XXXXXX")).string();
  return mkdtemp(t.data());
}

// One compile cache for the whole test process.
const fs::path& test_cache() {
  static const fs::path p = temp_dir("evo-gpu-cache");
  return p;
}

// The device, asked through a worker process: the test process itself never initialises CUDA
// (its evaluators fork compile workers).
const DeviceInfo& device() {
  static const DeviceInfo d = [] {
    try {
      WorkerClient w(evo_binary(), 0);
      return w.probe(120);
    } catch (const UserError& e) {
      DeviceInfo none;
      none.error = e.what();
      return none;
    }
  }();
  return d;
}

#define REQUIRE_GPU() \
  if (!device().present) GTEST_SKIP() << "no GPU to test on: " << device().error

struct CliResult {
  int code = -1;
  std::string out, err;
};
// run_evo with environment assignments before the command ("A=1 B=2").
CliResult run_evo_env(const std::string& env, const std::string& args) {
  const fs::path dir = temp_dir("evo-cli");
  const std::string cmd = env + " '" + evo_binary() + "' " + args + " >" + (dir / "out").string() + " 2>" + (dir / "err").string();
  int st = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream o(dir / "out"), e(dir / "err");
  std::stringstream so, se;
  so << o.rdbuf();
  se << e.rdbuf();
  r.out = so.str();
  r.err = se.str();
  fs::remove_all(dir);
  return r;
}

CliResult run_evo(const std::string& args) { return run_evo_env("", args); }

// Evaluators shared by the tests of one profile (a worker and a compile pool each).
Evaluator& evaluator(const std::string& profile_file, bool sanitize = false) {
  static std::map<std::string, std::pair<std::unique_ptr<Profile>, std::unique_ptr<Evaluator>>> all;
  const std::string key = profile_file + (sanitize ? "+sanitize" : "");
  auto& slot = all[key];
  if (!slot.second) {
    slot.first = std::make_unique<Profile>(load_profile(profile_file));
    GpuEvaluatorOptions o;
    o.jobs = 2;
    o.cache_dir = test_cache();
    o.metrics = false;
    o.sanitize = sanitize;
    o.evo_binary = evo_binary();
    slot.second = make_gpu_evaluator(*slot.first, o);
  }
  return *slot.second;
}
Evaluator& planted() { return evaluator(data("profiles/planted.json").string()); }
Evaluator& gemm() { return evaluator(repo("profiles/gemm_fp16.json").string()); }
Candidate plant(int n) { return Candidate{Config{{"TILE", 16}, {"PLANT", n}}, Origin{}}; }
// profiles/accumulate.json with a PLANT knob (templates/examples/accumulate.cu): Y += alpha * X
// into an inout buffer, H = X * X with its own atol 0.01, POS (i32) compared exactly.
Evaluator& accumulate() { return evaluator(data("profiles/accumulate_planted.json").string()); }
Candidate accumulate_plant(int n) { return Candidate{Config{{"BLOCK", 256}, {"ITEMS", 2}, {"PLANT", n}}, Origin{}}; }

// A copy of a shipped profile, edited, with its template files named absolutely (it is written elsewhere).
fs::path profile_copy(const fs::path& path, const std::string& tag, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(std::ifstream(path));
  edit(j);
  j["template"] = (path.parent_path() / j["template"].get<std::string>()).lexically_normal().string();
  j["reference"]["template"] =
      (path.parent_path() / j["reference"]["template"].get<std::string>()).lexically_normal().string();
  const fs::path out = temp_dir(tag) / path.filename();
  std::ofstream(out) << j.dump(1);
  return out;
}

// ---- on the GPU ----

// The profile's baseline with `change` passes evo's gates, GREEN on every problem within the profile's max_abs.
void expect_green_everywhere(const fs::path& path, const Config& change) {
  const Profile p = load_profile(path);
  Config cfg = p.baseline;
  for (const auto& [k, v] : change) cfg[k] = v;
  const Evaluation e = evaluator(path.string()).evaluate(Candidate{cfg, Origin{"test", "", {}}});
  ASSERT_EQ(e.status, Status::Measured) << path << " " << config_text(cfg) << ": " << e.message;
  ASSERT_EQ(e.green.problems.size(), p.problems.size());
  for (const auto& r : e.green.problems) {
    EXPECT_EQ(r.outcome, Outcome::Passed) << path << " " << config_text(cfg) << " " << r.problem << ": " << r.reason;
    EXPECT_LE(r.max_abs, p.gates.green.max_abs) << path << " " << r.problem;
  }
}

// The whole of a text file ("" when it cannot be read).
std::string file_text(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(GpuGates, GemmBaselinePassesGreenAndIsTimed) {
  REQUIRE_GPU();
  const Profile p = load_profile(repo("profiles/gemm_fp16.json"));
  const Evaluation e = gemm().evaluate(Candidate{p.baseline, Origin{"baseline", "", {}}});
  ASSERT_EQ(e.status, Status::Measured) << e.message;
  ASSERT_EQ(e.green.problems.size(), p.problems.size());
  for (const auto& r : e.green.problems) {
    EXPECT_EQ(r.outcome, Outcome::Passed) << r.problem << ": " << r.reason;
    EXPECT_EQ(r.nan_count + r.inf_count + r.unwritten, 0);
    EXPECT_LT(r.max_abs, p.gates.green.atol + 1e-9) << r.problem;
  }
  EXPECT_EQ(e.fast.outcome, Outcome::Passed);
  EXPECT_EQ(e.fast.problem, "mission");
  EXPECT_GT(e.fast.p50_us, 1.0);
  EXPECT_LE(e.fast.min_us, e.fast.p50_us);
  EXPECT_LE(e.fast.p50_us, e.fast.p90_us);
  EXPECT_GT(e.speedup, 0.8);  // the baseline against its own re-timing
  EXPECT_LT(e.speedup, 1.25);
  std::cout << "[gemm baseline] " << e.message << " (CV " << 100 * e.fast.cv << "%)\n";
}

// fp8 inputs carry their per-tensor descale as kernel arguments: the arguments must be packed after
// each trial's fill, or both kernels see descale 1 and the figures are judged on 448-scaled values.
TEST(GpuGates, Fp8AttentionBaselinePassesGreenWithItsDescales) {
  REQUIRE_GPU();
  const Profile p = load_profile(repo("profiles/sdpa_fp8.json"));
  const Evaluation e = evaluator(repo("profiles/sdpa_fp8.json").string()).evaluate(Candidate{p.baseline, Origin{"baseline", "", {}}});
  ASSERT_EQ(e.status, Status::Measured) << e.message;
  double worst = 0;
  for (const auto& r : e.green.problems) {
    EXPECT_EQ(r.outcome, Outcome::Passed) << r.problem << ": " << r.reason;
    EXPECT_LE(r.max_abs, p.gates.green.max_abs) << r.problem;
    worst = std::max(worst, r.max_abs);
    // The long problem has its own single input set (problems[].green); the others the gate's 3 x 2.
    EXPECT_EQ(r.trials_run, r.problem == "long" ? 1 : 6) << r.problem;
  }
  // Descaled outputs are O(1): an error near fp16's ulp at 64..128 means the descales were lost.
  EXPECT_LT(worst, 0.01);
}

// FlashAttention-3 with three consumer warpgroups (192 query rows) taking turns round the ping-pong
// barriers, persistent, and with e4m3 P·V the O rescale skipped where no max moved: a wrong hand-over
// hangs (a timeout naming the step) or races (GREEN fails), and the rows of the third warpgroup are
// only right if its descriptors and epilogue start at row 128. Every problem passes through evo's gates.
TEST(GpuGates, Fa3ThreeWarpgroupsLazyRescaleRowsumMmaItemOverlapAndExpBeforeMaxPassGreen) {
  REQUIRE_GPU();
  struct Case {
    const char* profile;
    Config change;
    bool rescore_every_rise = false;  // SDPA_RESCORE_RISE=0: EXP_BEFORE_MAX recomputes every row whose max rose
  };
  const std::vector<Case> cases = {
      {"profiles/sdpa_fp16_wgmma.json",
       {{"MMA_PATH", 3}, {"TILE_M", 192}, {"NUM_WARPS", 12}, {"TILE_N", 64}, {"STAGES", 2}, {"USE_TMA", 1},
        {"WG_PIPE", 1}, {"PINGPONG", 1}, {"PERSIST", 1}}},
      {"profiles/sdpa_fp8pv_wgmma.json",
       {{"TILE_M", 128}, {"NUM_WARPS", 8}, {"TILE_N", 224}, {"STAGES", 3}, {"WG_PIPE", 1}, {"PERSIST", 1},
        {"PINGPONG", 0}, {"LAZY_RESCALE", 1}}},
      // ROWSUM_MMA: the row sums from the P·V wgmma's ones columns, through 32-key panels (160 keys) and the
      // 128-byte swizzle (128 keys); wrong ones rows or a missed rescale of the sums fail GREEN on every problem
      {"profiles/sdpa_fp8pv_wgmma_d128.json",
       {{"TILE_N", 160}, {"STAGES", 2}, {"WG_PIPE", 1}, {"PERSIST", 1}, {"PINGPONG", 1}, {"ROWSUM_MMA", 1}}},
      // ITEM_OVERLAP: each block's items hand over in one turn (PERSIST, several items a block on every problem
      // but the small ones); a wrong turn count hangs, a wrong sum or an O not started over fails GREEN
      {"profiles/sdpa_fp8pv_wgmma_d128.json",
       {{"TILE_N", 192}, {"STAGES", 2}, {"WG_PIPE", 1}, {"PERSIST", 1}, {"PINGPONG", 1}, {"ROWSUM_MMA", 1},
        {"ITEM_OVERLAP", 1}}},
      {"profiles/sdpa_fp8pv_wgmma_d128.json",
       {{"TILE_N", 128}, {"STAGES", 3}, {"WG_PIPE", 0}, {"PERSIST", 0}, {"PINGPONG", 0}, {"ROWSUM_MMA", 1}}},
      // EXP_BEFORE_MAX: the exponentials against each row's reference before the tile's max; rows that rose
      // are rescaled (a wrong alpha or reference fails GREEN), and with SDPA_RESCORE_RISE=0 every row whose
      // max rose past its headroom has its scores recomputed from global memory (masked and causal tiles too)
      {"profiles/sdpa_fp8pv_wgmma_d128.json",
       {{"TILE_N", 192}, {"STAGES", 2}, {"WG_PIPE", 1}, {"PERSIST", 1}, {"PINGPONG", 1}, {"ROWSUM_MMA", 1},
        {"ITEM_OVERLAP", 1}, {"EXP_BEFORE_MAX", 1}}},
      {"profiles/sdpa_fp8pv_wgmma_d128.json",
       {{"TILE_N", 160}, {"STAGES", 2}, {"WG_PIPE", 0}, {"PERSIST", 0}, {"PINGPONG", 0}, {"EXP_BEFORE_MAX", 1}},
       true},
  };
  for (const auto& c : cases) {
    fs::path path = repo(c.profile);
    if (c.rescore_every_rise)  // the shipped profile with one more define
      path = profile_copy(path, "evo-rescore", [](nlohmann::json& j) { j["defines"]["SDPA_RESCORE_RISE"] = 0; });
    expect_green_everywhere(path, c.change);
  }
}

// STREAM_K: a persistent block's last waves are equal shares of key tiles, so an item may end in one block and start
// in the next; the two halves merge through partial_o and a ticket a warp. On every long problem items split (704
// items of 192 rows at D=64, 1 024 and 512 of 128 rows at D=128, against 132 blocks); the extra problem "odd" splits
// items whose last key tile and last query tile are partial ((2,13,1500,128): 312 items, 12 key tiles each). A wrong
// merge, a ticket left set by an earlier launch (GREEN launches each problem several times on the same buffers) or
// a half stored twice fails GREEN; the causal problems take whole items.
TEST(GpuGates, Fa3StreamKSplitItemsMergeAndPassGreen) {
  REQUIRE_GPU();
  struct Case {
    const char* profile;
    Config change;
    bool odd = false;  // add the problem (2,13,1500,128)
  };
  const std::vector<Case> cases = {
      {"profiles/sdpa_fp16_wgmma.json",  // three consumer warpgroups, 128-key tiles (Q_LEAN's producer)
       {{"MMA_PATH", 3}, {"TILE_M", 192}, {"NUM_WARPS", 12}, {"TILE_N", 128}, {"STAGES", 2}, {"USE_TMA", 1},
        {"WG_PIPE", 1}, {"PINGPONG", 1}, {"PERSIST", 1}, {"STREAM_K", 1}}},
      {"profiles/sdpa_fp16_wgmma.json",  // the same with ITEM_OVERLAP: halves end in the hand-over (the peers' kernel)
       {{"MMA_PATH", 3}, {"TILE_M", 192}, {"NUM_WARPS", 12}, {"TILE_N", 128}, {"STAGES", 2}, {"USE_TMA", 1},
        {"WG_PIPE", 1}, {"PINGPONG", 1}, {"PERSIST", 1}, {"STREAM_K", 1}, {"ITEM_OVERLAP", 1}}},
      {"profiles/sdpa_fp16_wgmma_d128.json",
       {{"MMA_PATH", 3}, {"TILE_M", 128}, {"NUM_WARPS", 8}, {"TILE_N", 128}, {"STAGES", 2}, {"USE_TMA", 1},
        {"WG_PIPE", 1}, {"PINGPONG", 0}, {"PERSIST", 1}, {"STREAM_K", 1}},
       true},
      {"profiles/sdpa_fp8_wgmma.json",  // fp16 P·V over V widened by the producer
       {{"MMA_PATH", 3}, {"TILE_M", 128}, {"NUM_WARPS", 8}, {"TILE_N", 64}, {"STAGES", 2}, {"USE_TMA", 1},
        {"WG_PIPE", 1}, {"PINGPONG", 1}, {"PERSIST", 1}, {"STREAM_K", 1}}},
      // the e4m3 D=128 export's configuration: halves end in ITEM_OVERLAP's hand-over, with the sums in O's columns
      // (ROWSUM_MMA) and references above the max (EXP_BEFORE_MAX)
      {"profiles/sdpa_fp8pv_wgmma_d128.json",
       {{"TILE_N", 192}, {"STAGES", 2}, {"WG_PIPE", 1}, {"PERSIST", 1}, {"PINGPONG", 0}, {"ROWSUM_MMA", 1},
        {"ITEM_OVERLAP", 1}, {"EXP_BEFORE_MAX", 1}, {"STREAM_K", 1}},
       true},
  };
  for (const auto& c : cases) {
    fs::path path = repo(c.profile);
    if (c.odd)
      path = profile_copy(path, "evo-stream-k", [](nlohmann::json& j) {
        j["problems"].push_back({{"name", "odd"}, {"sizes", {{"B", 2}, {"H", 13}, {"S", 1500}, {"D", 128}, {"causal", 0}}}});
      });
    expect_green_everywhere(path, c.change);
  }
}

// TMA tensor maps are encoded in the worker and passed by value: both swizzles copy X through a map
// and pass GREEN exactly against a plain copy, zeros past the last row included, and are timed.
TEST(GpuGates, TmaCopyThroughTensorMapsPassesGreenExactly) {
  REQUIRE_GPU();
  if (device().cc != "sm_90") GTEST_SKIP() << "tma_copy is built for sm_90a; the device is " << device().cc;
  Evaluator& tma = evaluator(data("profiles/tma_copy.json").string());
  for (std::int64_t swizzle : {0, 128}) {
    const Evaluation e = tma.evaluate(Candidate{Config{{"SWIZZLE", swizzle}}, Origin{}});
    ASSERT_EQ(e.status, Status::Measured) << "SWIZZLE=" << swizzle << ": " << e.message;
    ASSERT_EQ(e.green.problems.size(), 2u);
    for (const auto& r : e.green.problems) {
      EXPECT_EQ(r.outcome, Outcome::Passed) << "SWIZZLE=" << swizzle << ", " << r.problem << ": " << r.reason;
      EXPECT_EQ(r.max_abs, 0.0) << "SWIZZLE=" << swizzle << ", " << r.problem;
    }
    EXPECT_EQ(e.fast.outcome, Outcome::Passed) << e.fast.reason;
  }
}

// An evaluator of its own (not the cached one other tests share): these tests change its metrics settings.
std::unique_ptr<Evaluator> own_gpu_evaluator(const Profile& p) {
  GpuEvaluatorOptions o;
  o.jobs = 2;
  o.cache_dir = test_cache();
  o.evo_binary = evo_binary();
  return make_gpu_evaluator(p, o);
}

// A run reads metrics only near its best: the evaluator skips them (saying why) above the bound
// and collects them below it.
TEST(GpuGates, MetricsOnlyNearTheRunsBest) {
  REQUIRE_GPU();
  const Profile p = load_profile(repo("profiles/gemm_fp16.json"));
  auto ev = own_gpu_evaluator(p);
  ev->set_metrics_max_p50_us(1.0);  // far below the gemm's ~125 us
  const Evaluation far = ev->evaluate(Candidate{p.baseline, Origin{"baseline", "", {}}});
  ASSERT_EQ(far.status, Status::Measured) << far.message;
  EXPECT_EQ(far.metrics.outcome, Outcome::Skipped);
  EXPECT_NE(far.metrics.reason.find("not collected"), std::string::npos) << far.metrics.reason;
  ev->set_metrics_max_p50_us(1e9);
  const Evaluation near = ev->evaluate(Candidate{p.baseline, Origin{"baseline", "", {}}});
  EXPECT_EQ(near.metrics.outcome, Outcome::Passed) << near.metrics.reason;
}

// A strategy that reads no metrics gets none while it runs, and its best are profiled alone at the
// run's end (engine/evaluator.h, set_metrics_during_run and collect_metrics): the job with GREEN
// and FAST off and metrics on gives what a pass during the run gives.
TEST(GpuGates, MetricsDeferredDuringTheRunAndCollectedAloneAtItsEnd) {
  REQUIRE_GPU();
  const Profile p = load_profile(repo("profiles/gemm_fp16.json"));
  auto ev = own_gpu_evaluator(p);
  const Candidate base{p.baseline, Origin{"baseline", "", {}}};
  const Evaluation during = ev->evaluate(base);
  ASSERT_EQ(during.status, Status::Measured) << during.message;
  if (during.metrics.outcome != Outcome::Passed) GTEST_SKIP() << "no metrics on this machine: " << during.metrics.reason;
  ev->set_metrics_during_run(false);
  const Evaluation deferred = ev->evaluate(base);
  ASSERT_EQ(deferred.status, Status::Measured) << deferred.message;
  EXPECT_EQ(deferred.metrics.outcome, Outcome::Skipped);
  EXPECT_EQ(deferred.metrics.reason, kMetricsDeferred);
  EXPECT_TRUE(deferred.metrics.values.empty());
  double seconds = 0;
  const auto alone = ev->collect_metrics(base, &seconds);
  ASSERT_TRUE(alone.has_value());
  EXPECT_EQ(alone->outcome, Outcome::Passed) << alone->reason;
  EXPECT_GT(seconds, 0.0);
  for (const auto& [name, value] : during.metrics.values) {
    ASSERT_TRUE(alone->values.count(name)) << name;
    if (name == "gpu__time_duration.sum") {
      EXPECT_NEAR(alone->values.at(name), value, 0.2 * value) << name;
    }
  }
}

// The run's end profiles its best side by side, one GPU for each 16 of them (engine/evaluator.h,
// collect_metrics_of), up to 16 in one collection (collect_metrics_batch): each answer must be its
// own candidate's, whichever GPU and whichever place in the batch took it. Two configurations of
// clearly different speed, interleaved, 18 in all (two GPUs where there are several): each
// range's duration follows its candidate, not its neighbour.
TEST(GpuGates, MetricsAtTheRunsEndOnEveryGpuAnswerForTheirOwnCandidate) {
  REQUIRE_GPU();
  const Profile p = load_profile(repo("profiles/gemm_fp16.json"));
  // Every collection's steps, one line each: the workers inherit it.
  const fs::path times = temp_dir("evo-end-batch") / "times.jsonl";
  const char* was = std::getenv("EVO_METRICS_TIMES");
  const std::string kept_times = was ? was : "";
  ::setenv("EVO_METRICS_TIMES", times.c_str(), 1);
  GpuEvaluatorOptions o;
  o.jobs = 2;
  o.cache_dir = test_cache();
  o.evo_binary = evo_binary();
  o.devices = {-1};
  auto ev = make_gpu_evaluator(p, o);
  const Candidate a{p.baseline, Origin{"baseline", "", {}}};
  Config small = p.baseline;
  small["BLOCK_M"] = 32, small["BLOCK_N"] = 32, small["BLOCK_K"] = 16, small["WARPS_M"] = 2, small["WARPS_N"] = 1;
  small["STAGES"] = 1, small["USE_CP_ASYNC"] = 0;
  const Candidate b{small, Origin{"test", "", {}}};
  const Evaluation ea = ev->evaluate(a), eb = ev->evaluate(b);
  ASSERT_EQ(ea.status, Status::Measured) << ea.message;
  ASSERT_EQ(eb.status, Status::Measured) << eb.message;
  if (ea.metrics.outcome != Outcome::Passed) GTEST_SKIP() << "no metrics on this machine: " << ea.metrics.reason;
  ASSERT_GT(eb.fast.p50_us, 1.3 * ea.fast.p50_us) << "the small tile should be clearly slower";
  std::vector<Candidate> list;
  for (int i = 0; i < 9; ++i) list.push_back(a), list.push_back(b);
  const auto got = ev->collect_metrics_of(list);
  ASSERT_EQ(got.size(), 18u);
  std::set<int> gpus;
  for (const auto& g : got) gpus.insert(g.lane);
  EXPECT_EQ(gpus.size(), std::min<std::size_t>(2, ev->lanes())) << "18 candidates: one GPU for each 16";
  std::vector<double> us;
  for (const auto& g : got) {
    ASSERT_TRUE(g.metrics.has_value());
    ASSERT_EQ(g.metrics->outcome, Outcome::Passed) << g.metrics->reason;
    EXPECT_GT(g.seconds, 0.0);
    ASSERT_TRUE(g.metrics->values.count(metric::kDuration));
    us.push_back(g.metrics->values.at(metric::kDuration) / 1000.0);
  }
  for (std::size_t i = 0; i < us.size(); ++i) {
    const double fast = i % 2 ? eb.fast.p50_us : ea.fast.p50_us;
    EXPECT_NEAR(us[i], fast, 0.25 * fast) << "answer " << i << " on " << ev->lanes() << " GPU(s)";
  }
  ev.reset();
  if (kept_times.empty()) ::unsetenv("EVO_METRICS_TIMES");
  else ::setenv("EVO_METRICS_TIMES", kept_times.c_str(), 1);
  // Interleaved in one or two collections (16 candidates' ranges at most in one), not 18: the two
  // candidates measured first had theirs too.
  const std::string lines = file_text(times);
  EXPECT_LE(std::count(lines.begin(), lines.end(), '\n'), 2 + 2) << lines;
  fs::remove_all(times.parent_path());
}

TEST(GpuGates, OffByOneTileFailsGreenWithFigures) {
  REQUIRE_GPU();
  const Evaluation e = planted().evaluate(plant(1));
  ASSERT_EQ(e.status, Status::GreenFailed) << e.message;
  ASSERT_FALSE(e.green.problems.empty());
  const GreenResult& r = e.green.problems.front();
  EXPECT_EQ(r.outcome, Outcome::Rejected);
  EXPECT_GT(r.bad_pct, 50.0);  // one of four K tiles missing: nearly every element is off
  EXPECT_GT(r.max_abs, 0.1);
  EXPECT_NE(e.message.find("bad"), std::string::npos) << e.message;
  EXPECT_EQ(e.fast.outcome, Outcome::Skipped);  // green before fast: a wrong kernel is never timed
  std::cout << "[off-by-one] " << e.message << "\n";
}

TEST(GpuGates, FaultIsACrashAndTheNextCandidateStillEvaluates) {
  REQUIRE_GPU();
  const Evaluation bad = planted().evaluate(plant(2));
  ASSERT_EQ(bad.status, Status::Crashed) << bad.message;
  EXPECT_NE(bad.message.find("illegal memory access"), std::string::npos) << bad.message;
  EXPECT_NE(bad.message.find("green: candidate launch (problem small, seed 0, trial 0)"), std::string::npos)
      << bad.message;
  std::cout << "[fault] " << bad.message << "\n";
  const Evaluation good = planted().evaluate(plant(0));
  EXPECT_EQ(good.status, Status::Measured) << good.message;
}

TEST(GpuGates, HangIsATimeoutNamingTheStep) {
  REQUIRE_GPU();
  const auto t0 = std::chrono::steady_clock::now();
  const Evaluation e = planted().evaluate(plant(3));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(e.status, Status::Timeout) << e.message;
  EXPECT_NE(e.message.find("green: candidate launch"), std::string::npos) << e.message;
  EXPECT_LT(s, 30.0);  // timeout_s is 2 in the profile
  std::cout << "[hang] " << e.message << " (" << s << " s)\n";
  EXPECT_EQ(planted().evaluate(plant(0)).status, Status::Measured);
}

TEST(GpuGates, NaNFailsGreenNamingTheElement) {
  REQUIRE_GPU();
  const Evaluation e = planted().evaluate(plant(4));
  ASSERT_EQ(e.status, Status::GreenFailed) << e.message;
  EXPECT_EQ(e.green.problems.front().nan_count, 1);
  EXPECT_NE(e.message.find("C[3,5]"), std::string::npos) << e.message;
  std::cout << "[nan] " << e.message << "\n";
}

TEST(GpuGates, InoutAccumulatingKernelPassesGreenAndIsTimed) {
  REQUIRE_GPU();
  const Evaluation e = accumulate().evaluate(accumulate_plant(0));
  ASSERT_EQ(e.status, Status::Measured) << e.message;
  EXPECT_EQ(e.green.outcome, Outcome::Passed) << e.green.reason;
  ASSERT_EQ(e.green.problems.size(), 2u);
  for (const GreenResult& r : e.green.problems) {
    EXPECT_EQ(r.unwritten, 0) << r.problem;
    EXPECT_LT(r.max_abs, 1e-6) << r.problem;  // the same float operations as the reference
  }
  EXPECT_EQ(e.fast.outcome, Outcome::Passed) << e.fast.reason;
  EXPECT_GT(e.fast.p50_us, 0);
}

TEST(GpuGates, InoutKernelThatAddsTwiceFailsGreenWithFigures) {
  REQUIRE_GPU();
  const Evaluation e = accumulate().evaluate(accumulate_plant(1));
  ASSERT_EQ(e.status, Status::GreenFailed) << e.message;
  const GreenResult& r = e.green.problems.front();
  EXPECT_EQ(r.outcome, Outcome::Rejected);
  EXPECT_GT(r.bad_pct, 90.0);  // alpha * X is far above 1e-6 nearly everywhere
  EXPECT_GT(r.max_abs, 1.0);   // max |alpha * X| over 1000 normal draws
  EXPECT_NE(e.message.find("Y: "), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("bad"), std::string::npos) << e.message;
  EXPECT_EQ(e.fast.outcome, Outcome::Skipped);
  std::cout << "[adds twice] " << e.message << "\n";
}

TEST(GpuGates, IntegerOutputOffByOneFailsGreenExactly) {
  REQUIRE_GPU();
  const Evaluation e = accumulate().evaluate(accumulate_plant(2));
  ASSERT_EQ(e.status, Status::GreenFailed) << e.message;
  EXPECT_NE(e.message.find("POS: "), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("POS[7]"), std::string::npos) << e.message;
  EXPECT_EQ(e.green.problems.front().max_abs, 1.0);
  std::cout << "[i32 off by one] " << e.message << "\n";
}

// A T1 file with uint8, int16, bool, double and float4 buffers, a __device__ symbol and int64 and
// uint32 scalars: another configuration than the default passes GREEN against it, every output
// compared (a wrong scalar's width or a misplaced symbol would change sum, diff or high).
TEST(GpuGates, T1FileOfEveryArgumentTypePassesGreenAgainstItsDefault) {
  REQUIRE_GPU();
  const std::string t1 = data("t1/small_types.json").string();
  const Evaluation e = evaluator(t1).evaluate(Candidate{Config{{"block_size_x", 64}, {"items", 4}}, Origin{"test", "", {}}});
  ASSERT_EQ(e.status, Status::Measured) << e.message;
  ASSERT_FALSE(e.green.problems.empty());
  for (const auto& r : e.green.problems) {
    EXPECT_EQ(r.outcome, Outcome::Passed) << r.problem << ": " << r.reason;
    EXPECT_EQ(r.nan_count + r.inf_count + r.unwritten, 0) << r.problem;
    EXPECT_EQ(r.max_abs, 0.0) << r.problem;  // the same arithmetic in both: bit for bit
  }
  EXPECT_EQ(e.fast.outcome, Outcome::Passed);
  std::cout << "[t1 types] " << e.message << "\n";
}

TEST(GpuGates, PerBufferThresholdOverridesTheProfiles) {
  REQUIRE_GPU();
  // H errs by 1e-3: far outside the profile's atol 1e-6, inside H's own atol 0.01.
  const Evaluation inside = accumulate().evaluate(accumulate_plant(3));
  ASSERT_EQ(inside.status, Status::Measured) << inside.message;
  EXPECT_GT(inside.green.problems.front().max_abs, 5e-4);
  EXPECT_LT(inside.green.problems.front().max_abs, 2e-3);
  // H errs by 0.1: outside H's atol.
  const Evaluation outside = accumulate().evaluate(accumulate_plant(4));
  ASSERT_EQ(outside.status, Status::GreenFailed) << outside.message;
  EXPECT_NE(outside.message.find("H: "), std::string::npos) << outside.message;
  EXPECT_NE(outside.message.find("> 0.01"), std::string::npos) << outside.message;
  std::cout << "[per-buffer atol] " << outside.message << "\n";
}

TEST(GpuGates, SanitizeCatchesAReadPastTheEndThatGreenCannotSee) {
  REQUIRE_GPU();
  if (!find_compute_sanitizer()) GTEST_SKIP() << "no compute-sanitizer on this machine";
  const Evaluation e = planted().evaluate(plant(5));
  EXPECT_EQ(e.status, Status::Measured) << "GREEN alone passes it: " << e.message;
  const SanitizeVerdict v = planted().sanitize(plant(5));
  EXPECT_EQ(v.outcome, Outcome::Rejected) << v.first_message;
  EXPECT_GE(v.errors, 1);
  EXPECT_NE(v.first_message.find("Invalid __global__ read"), std::string::npos) << v.first_message;
  std::cout << "[oob read] memcheck: " << v.errors << " errors: " << v.first_message << "\n";
  // With --sanitize the same candidate is not green.
  const Evaluation s = evaluator(data("profiles/planted.json").string(), true).evaluate(plant(5));
  EXPECT_EQ(s.status, Status::SanitizeFailed) << s.message;
}

TEST(GpuGates, SanitizeFindsNoErrorsInTheGemmBaseline) {
  REQUIRE_GPU();
  if (!find_compute_sanitizer()) GTEST_SKIP() << "no compute-sanitizer on this machine";
  const Profile p = load_profile(repo("profiles/gemm_fp16.json"));
  const SanitizeVerdict v = gemm().sanitize(Candidate{p.baseline, Origin{}});
  EXPECT_EQ(v.outcome, Outcome::Passed) << v.first_message;
  EXPECT_EQ(v.errors, 0);
}

TEST(GpuGates, TimingTheSameConfigTwiceAgreesWithinItsNoise) {
  REQUIRE_GPU();
  const Timing a = gemm().time_baseline();
  const Timing b = gemm().time_baseline();
  ASSERT_EQ(a.outcome, Outcome::Passed) << a.reason;
  ASSERT_EQ(b.outcome, Outcome::Passed) << b.reason;
  const double diff = std::fabs(a.p50_us - b.p50_us) / a.p50_us;
  // Two CVs (and at least 2%: a quiet GPU gives CVs well under 1%).
  EXPECT_LE(diff, std::max(0.02, 2 * std::max(a.cv, b.cv)))
      << "p50 " << a.p50_us << " vs " << b.p50_us << " us, CV " << a.cv << " / " << b.cv;
  std::cout << "[twice] p50 " << a.p50_us << " / " << b.p50_us << " us, CV " << 100 * a.cv << "% / " << 100 * b.cv
            << "%, differ by " << 100 * diff << "%\n";
}

TEST(GpuGates, GraphModeTimesOneLaunchOfAReplayedGraph) {
  REQUIRE_GPU();
  // The planted profile with graph timing; the template path made absolute so the copy can live anywhere.
  nlohmann::json j;
  std::ifstream(data("profiles/planted.json")) >> j;
  j["template"] = data("templates/planted_gemm.cu").string();
  j["reference"]["template"] = data("templates/gemm_naive_ref.cu").string();
  j["gates"]["fast"] = {{"mode", "graph"}, {"warmup", 3}, {"iters", 20}, {"graph_launches", 10}};
  const fs::path dir = temp_dir("evo-graph");
  std::ofstream(dir / "planted_graph.json") << j.dump(2);
  const Timing g = evaluator((dir / "planted_graph.json").string()).time_baseline();
  const Timing ev = planted().time_baseline();
  ASSERT_EQ(g.outcome, Outcome::Passed) << g.reason;
  EXPECT_EQ(g.mode, "graph");
  EXPECT_EQ(ev.mode, "events");
  EXPECT_GT(g.p50_us, 0.5);
  EXPECT_LT(g.p50_us, 2 * ev.p50_us);  // per launch, not per graph of 10
  std::cout << "[graph] p50 " << g.p50_us << " us per launch vs events " << ev.p50_us << " us\n";
}

// ---- several launches, and references that are not kernels ----

// A shipped profile as JSON, its template paths made absolute so an edited copy can live anywhere.
nlohmann::json shipped_json(const std::string& name) {
  nlohmann::json j;
  std::ifstream(repo("profiles/" + name + ".json")) >> j;
  const fs::path dir = repo("profiles");
  if (j.contains("template")) j["template"] = fs::weakly_canonical(dir / j["template"].get<std::string>()).string();
  if (j["reference"].contains("template"))
    j["reference"]["template"] = fs::weakly_canonical(dir / j["reference"]["template"].get<std::string>()).string();
  return j;
}
fs::path write_json(const nlohmann::json& j, const std::string& stem) {
  const fs::path dir = temp_dir("evo-" + stem);
  std::ofstream(dir / (stem + ".json")) << j.dump(2);
  return dir / (stem + ".json");
}
bool have_numpy() { return std::system("python3 -c 'import numpy' >/dev/null 2>&1") == 0; }
#define REQUIRE_NUMPY() \
  if (!have_numpy()) GTEST_SKIP() << "python3 with NumPy is not installed (scripts/install-deps.sh: python3-numpy)"

TEST(GpuGates, TwoLaunchReductionPassesGreenAndIsTimedAsOneUnit) {
  REQUIRE_GPU();
  const Profile p = load_profile(repo("profiles/reduce_sum.json"));
  Evaluator& ev = evaluator(repo("profiles/reduce_sum.json").string());
  const Evaluation e = ev.evaluate(Candidate{p.baseline, Origin{}});
  ASSERT_EQ(e.status, Status::Measured) << e.message;
  EXPECT_EQ(e.build.kernels.size(), 2u);
  ASSERT_EQ(e.green.problems.size(), 2u);
  for (const GreenResult& r : e.green.problems) {
    EXPECT_EQ(r.outcome, Outcome::Passed) << r.problem << ": " << r.reason;
    EXPECT_EQ(r.unwritten, 0) << r.problem;
    EXPECT_EQ(r.trials_run, 4) << r.problem;  // 2 seeds x 2 trials
  }
  EXPECT_EQ(e.fast.outcome, Outcome::Passed) << e.fast.reason;
  EXPECT_GT(e.fast.p50_us, 0);
  // Another split of the work between the two launches gives the same sum.
  const Evaluation f = ev.evaluate(Candidate{{{"BLOCK", 1024}, {"ITEMS", 8}, {"FINAL_BLOCK", 32}}, Origin{}});
  EXPECT_EQ(f.status, Status::Measured) << f.message;

  // The unit is both launches: its time is more than the first launch's alone (the same
  // profile without its second launch, timed by FAST only).
  nlohmann::json j = shipped_json("reduce_sum");
  j["launches"].erase(1);
  Evaluator& first_only = evaluator(write_json(j, "reduce_first_only").string());
  const Timing both = ev.time_baseline(), one = first_only.time_baseline();
  ASSERT_EQ(both.outcome, Outcome::Passed) << both.reason;
  ASSERT_EQ(one.outcome, Outcome::Passed) << one.reason;
  EXPECT_GT(both.p50_us, one.p50_us);
  std::cout << "[two launches] p50 " << both.p50_us << " us, the first alone " << one.p50_us << " us\n";

  // Without its second launch SUM is never written: GREEN says so.
  const Evaluation g = first_only.evaluate(Candidate{p.baseline, Origin{}});
  ASSERT_EQ(g.status, Status::GreenFailed) << g.message;
  EXPECT_EQ(g.green.problems.front().unwritten, 1);
  EXPECT_NE(g.message.find("SUM"), std::string::npos) << g.message;
}

TEST(GpuGates, TwoLaunchReductionInGraphModeCapturesBothLaunches) {
  REQUIRE_GPU();
  nlohmann::json j = shipped_json("reduce_sum");
  j["gates"]["fast"] = {{"mode", "graph"}, {"warmup", 3}, {"iters", 20}, {"graph_launches", 10}};
  const Profile p = load_profile(repo("profiles/reduce_sum.json"));
  const Evaluation e = evaluator(write_json(j, "reduce_graph").string()).evaluate(Candidate{p.baseline, Origin{}});
  ASSERT_EQ(e.status, Status::Measured) << e.message;
  EXPECT_EQ(e.fast.mode, "graph");
  EXPECT_GT(e.fast.p50_us, 0);
}

// Inputs of gigabytes (Kernel Tuner's reduction reads 3.2 GB): host and device copies of a fill
// came to more than the fill memo's old fixed bound (4 GB), so each new fill cleared the memo and
// every candidate read its inputs back from the trial store, checked and uploaded them again, 20 s a
// candidate on an H200 (docs/results/landscapes_h200); the reference outputs' old bound (2 GB) was
// as short. The bounds are now shares of the device's memory: the candidates after the first find
// their fills and references kept. Its first form compared the second candidate's GREEN with the
// first's; on the H200 the first was 42 ms too (twenty-first session), so the fills are not drawn
// inside the first GREEN's steps: this form reads the steps (EVO_GREEN_TIMES) and the walls.
TEST(GpuGates, InputsOfGigabytesAreKeptFromOneCandidateToTheNext) {
  REQUIRE_GPU();
  nlohmann::json j = shipped_json("accumulate");  // Y += alpha * X: X an input, Y an inout, 1.6 GB each
  j["problems"] = {{{"name", "small"}, {"sizes", {{"N", 1000}}}}, {{"name", "main"}, {"sizes", {{"N", 400000000}}}}};
  j["gates"]["green"]["seeds"] = {0};
  j["gates"]["green"]["trials"] = 1;
  j["gates"]["fast"]["iters"] = 5;
  const fs::path file = write_json(j, "accumulate_large");
  const Profile p = load_profile(file);
  const fs::path times = temp_dir("evo-kept-fills") / "green.jsonl";
  ::setenv("EVO_GREEN_TIMES", times.c_str(), 1);  // the worker inherits it
  GpuEvaluatorOptions o;
  o.jobs = 2;
  o.cache_dir = temp_dir("evo-kept-fills-cache");  // nothing another test stored
  o.metrics = false;
  o.evo_binary = evo_binary();
  auto ev = make_gpu_evaluator(p, o);
  std::vector<Evaluation> got;
  std::vector<double> walls;
  for (const Config& c : {Config{{"BLOCK", 256}, {"ITEMS", 1}}, Config{{"BLOCK", 512}, {"ITEMS", 2}},
                          Config{{"BLOCK", 128}, {"ITEMS", 4}}}) {
    const auto t = std::chrono::steady_clock::now();
    got.push_back(ev->evaluate(Candidate{c, Origin{}}));
    walls.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
    ASSERT_EQ(got.back().status, Status::Measured) << got.back().message;
  }
  ev.reset();
  ::unsetenv("EVO_GREEN_TIMES");
  const std::string lines = file_text(times);
  std::cout << "[1.6 GB inputs] walls " << walls[0] << ", " << walls[1] << ", " << walls[2] << " s; GREEN "
            << got[0].seconds_green << ", " << got[1].seconds_green << ", " << got[2].seconds_green
            << " s; FAST " << got[0].seconds_fast << ", " << got[1].seconds_fast << ", " << got[2].seconds_fast
            << " s\n" << lines;
  std::vector<nlohmann::json> steps;
  std::istringstream in(lines);
  for (std::string l; std::getline(in, l);) steps.push_back(nlohmann::json::parse(l));
  ASSERT_EQ(steps.size(), 3u) << lines;
  // Reading the 3.2 GB back, checking and uploading it takes a second or more (call B: 20 s a
  // candidate with the FAST and metrics passes); kept, the later candidates' inputs are device
  // copies, some milliseconds.
  for (std::size_t k = 1; k < 3; ++k) {
    EXPECT_LT(got[k].seconds_green, 0.5) << "candidate " << k;
    EXPECT_LT(got[k].seconds_fast, 0.5) << "candidate " << k;
    EXPECT_LT(steps[k]["steps"].value("inputs", 0.0), 0.1) << steps[k].dump();
    EXPECT_FALSE(steps[k]["steps"].contains("references_fill")) << "references kept: " << steps[k].dump();
  }
  fs::remove_all(times.parent_path());
  fs::remove_all(o.cache_dir);
}

TEST(GpuGates, CommandReferenceProfilePassesGreen) {
  REQUIRE_GPU();
  REQUIRE_NUMPY();
  const Profile p = load_profile(repo("profiles/stencil3.json"));
  const Evaluation e = evaluator(repo("profiles/stencil3.json").string()).evaluate(Candidate{p.baseline, Origin{}});
  ASSERT_EQ(e.status, Status::Measured) << e.message;
  ASSERT_EQ(e.green.problems.size(), 2u);
  for (const GreenResult& r : e.green.problems) {
    EXPECT_EQ(r.outcome, Outcome::Passed) << r.problem << ": " << r.reason;
    EXPECT_EQ(r.trials_run, 4) << r.problem;
    EXPECT_LT(r.max_abs, 1e-5) << r.problem;
  }
  EXPECT_EQ(e.fast.outcome, Outcome::Passed) << e.fast.reason;
}

TEST(GpuGates, AFailingReferenceCommandStopsTheEvaluationBlamingNoCandidate) {
  REQUIRE_GPU();
  nlohmann::json j = shipped_json("stencil3");
  j["reference"] = {{"command", "python3 -c 'import sys; sys.exit(5)' {in} {out}"}};
  const Profile p = load_profile(repo("profiles/stencil3.json"));
  Evaluator& ev = evaluator(write_json(j, "stencil3_broken_reference").string());
  try {
    const Evaluation e = ev.evaluate(Candidate{p.baseline, Origin{}});
    FAIL() << "evaluated as " << status_name(e.status) << ": " << e.message;
  } catch (const ReferenceError& err) {
    const std::string what = err.what();
    EXPECT_NE(what.find("reference command `python3 -c 'import sys; sys.exit(5)' {in} {out}`: output Y: exited with status 5"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(GpuGates, DataReferenceProfilePassesOnItsFixedInputsAndCatchesAWrongOne) {
  REQUIRE_GPU();
  // stencil3 on stored data: X and the expected Y for N = 1000, written here.
  const int n = 1000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = std::sin(0.37f * i) * 3.0f;
  for (int i = 0; i < n; ++i)
    y[i] = static_cast<float>(0.25 * x[i > 0 ? i - 1 : 0] + 0.5 * x[i] + 0.25 * x[i + 1 < n ? i + 1 : n - 1]);
  auto as_npy = [&](const std::vector<float>& v) {
    NpyArray a{"<f4", {n}, std::vector<std::uint8_t>(v.size() * 4)};
    std::memcpy(a.bytes.data(), v.data(), a.bytes.size());
    return a;
  };
  nlohmann::json j = shipped_json("stencil3");
  j["problems"] = {{{"name", "fixed"}, {"sizes", {{"N", n}}}}};
  j["objective"] = "fixed";
  j["reference"] = {{"data", {{"inputs", {{"X", "x.npy"}}}, {"outputs", {{"Y", "y.npy"}}}}}};
  const fs::path good = write_json(j, "stencil3_data");
  write_npy(good.parent_path() / "x.npy", as_npy(x));
  write_npy(good.parent_path() / "y.npy", as_npy(y));
  const Profile p = load_profile(good);
  const Evaluation e = evaluator(good.string()).evaluate(Candidate{p.baseline, Origin{}});
  ASSERT_EQ(e.status, Status::Measured) << e.message;
  ASSERT_EQ(e.green.problems.size(), 1u);
  EXPECT_EQ(e.green.problems[0].trials_run, 1);  // fixed inputs: one trial
  EXPECT_LT(e.green.problems[0].max_abs, 1e-5);

  y[7] += 1.0f;  // a stored answer the kernel does not give
  const fs::path bad = write_json(j, "stencil3_data_wrong");
  write_npy(bad.parent_path() / "x.npy", as_npy(x));
  write_npy(bad.parent_path() / "y.npy", as_npy(y));
  const Evaluation w = evaluator(bad.string()).evaluate(Candidate{p.baseline, Origin{}});
  ASSERT_EQ(w.status, Status::GreenFailed) << w.message;
  EXPECT_NE(w.message.find("Y[7]"), std::string::npos) << w.message;
}

// ---- several workers on one host: the reference outputs made once, metrics one at a time ----

// A GREEN job for gemm_fp16's baseline against its reference kernel, built into `cache` (compiled
// here: NVRTC only, the test process never initialises CUDA), keeping reference results in
// `cache`/reference as the GPU evaluator's jobs do; `share`: the reference's outputs stored there
// too (EVO_REFERENCE_STORE=1), else only the trials' inputs.
WorkerJob gemm_green_job(const fs::path& cache, bool share = true) {
  const Profile p = load_profile(repo("profiles/gemm_fp16.json"));
  const std::string arch = p.arch.rfind(device().cc, 0) == 0 ? p.arch : device().cc;
  CompileCache cc(cache);
  const Config c(p.baseline.begin(), p.baseline.end());
  const Build cand = compile(candidate_request(p, c, arch), cc), ref = compile(reference_request(p, arch), cc);
  EXPECT_TRUE(cand.ok && ref.ok) << cand.log << ref.log;
  WorkerJob job;
  job.profile_path = p.path.string();
  job.config = c;
  job.candidate_cubin = cand.cubin_path;
  job.candidate_name = cand.lowered_name;
  job.reference_cubin = ref.cubin_path;
  job.reference_name = ref.lowered_name;
  job.reference_cache = (cache / "reference").string();
  job.share_kernel_outputs = share;
  job.green = true;
  return job;
}
std::size_t stored_files(const fs::path& cache, const std::string& ext) {
  std::size_t n = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(cache / "reference", ec), end; !ec && it != end; it.increment(ec))
    n += it->path().extension() == ext;
  return n;
}
int gemm_trials() {
  const Profile p = load_profile(repo("profiles/gemm_fp16.json"));
  return static_cast<int>(p.problems.size() * p.gates.green.seeds.size()) * p.gates.green.trials;
}

// A second worker of the run (another GPU's, or this one's restarted after a crash) reads the
// reference outputs the first stored instead of drawing the inputs and launching the reference,
// and judges the candidate exactly as the first did.
TEST(GpuReferenceStore, ASecondWorkerReadsTheReferenceOutputsInsteadOfMakingThem) {
  REQUIRE_GPU();
  const fs::path cache = temp_dir("evo-refstore");
  const WorkerJob job = gemm_green_job(cache);
  const int n = gemm_trials();
  WorkerClient first(evo_binary(), 0);
  const WorkerAnswer a = first.run(job, 300);
  ASSERT_EQ(a.outcome, Outcome::Passed) << a.message;
  ASSERT_EQ(a.green.outcome, Outcome::Passed) << a.green.reason;
  EXPECT_EQ(a.references_made, n) << "a fresh cache: the first worker makes every trial";
  EXPECT_EQ(a.references_read, 0);
  EXPECT_TRUE(a.warnings.empty());

  WorkerClient second(evo_binary(), 0);  // another process, nothing in memory
  const WorkerAnswer b = second.run(job, 300);
  ASSERT_EQ(b.outcome, Outcome::Passed) << b.message;
  ASSERT_EQ(b.green.outcome, Outcome::Passed) << b.green.reason;
  EXPECT_EQ(b.references_made, 0) << "the second worker launched the reference again";
  EXPECT_EQ(b.references_read, n);
  ASSERT_EQ(b.green.problems.size(), a.green.problems.size());
  for (std::size_t i = 0; i < a.green.problems.size(); ++i) {
    EXPECT_EQ(b.green.problems[i].max_abs, a.green.problems[i].max_abs) << a.green.problems[i].problem;
    EXPECT_EQ(b.green.problems[i].mean_abs, a.green.problems[i].mean_abs) << a.green.problems[i].problem;
  }

  const WorkerAnswer c = first.run(job, 300);  // the worker's own memory first
  EXPECT_EQ(c.references_made + c.references_read, 0);
  fs::remove_all(cache);
}

// By default a kernel reference runs on each worker's GPU (its launches cost less than its outputs'
// trip through the disk, gates/green.h): a second worker makes every trial's outputs itself, reads
// none, and judges exactly as the first; only the trials' inputs are stored and shared.
TEST(GpuReferenceStore, AKernelReferencesOutputsAreMadeByEachWorkerUnlessShared) {
  REQUIRE_GPU();
  const fs::path cache = temp_dir("evo-refstore");
  const WorkerJob job = gemm_green_job(cache, /*share=*/false);
  const int n = gemm_trials();
  WorkerClient first(evo_binary(), 0), second(evo_binary(), 0);
  const WorkerAnswer a = first.run(job, 300);
  ASSERT_EQ(a.outcome, Outcome::Passed) << a.message;
  ASSERT_EQ(a.green.outcome, Outcome::Passed) << a.green.reason;
  const WorkerAnswer b = second.run(job, 300);
  ASSERT_EQ(b.outcome, Outcome::Passed) << b.message;
  ASSERT_EQ(b.green.outcome, Outcome::Passed) << b.green.reason;
  EXPECT_EQ(a.references_made, n);
  EXPECT_EQ(b.references_made, n) << "the second worker read outputs nobody should have stored";
  EXPECT_EQ(a.references_read + b.references_read, 0);
  EXPECT_EQ(stored_files(cache, ".out"), 0u);
  EXPECT_GT(stored_files(cache, ".fill"), 0u) << "the trials' inputs are still drawn once and shared";
  ASSERT_EQ(b.green.problems.size(), a.green.problems.size());
  for (std::size_t i = 0; i < a.green.problems.size(); ++i) {
    EXPECT_EQ(b.green.problems[i].max_abs, a.green.problems[i].max_abs) << a.green.problems[i].problem;
    EXPECT_EQ(b.green.problems[i].mean_abs, a.green.problems[i].mean_abs) << a.green.problems[i].problem;
  }
  fs::remove_all(cache);
}

// Two workers starting the same run at once: every trial's reference outputs are made once in all,
// and each worker has all of them (made or read).
TEST(GpuReferenceStore, TwoWorkersStartingAtOnceMakeEachTrialOnce) {
  REQUIRE_GPU();
  const fs::path cache = temp_dir("evo-refstore");
  const WorkerJob job = gemm_green_job(cache);
  const int n = gemm_trials();
  WorkerClient w0(evo_binary(), 0), w1(evo_binary(), 0);
  EXPECT_TRUE(w0.probe().present && w1.probe().present);  // both started before either job
  WorkerAnswer a, b;
  std::thread t0([&] { a = w0.run(job, 300); }), t1([&] { b = w1.run(job, 300); });
  t0.join(), t1.join();
  ASSERT_EQ(a.outcome, Outcome::Passed) << a.message;
  ASSERT_EQ(b.outcome, Outcome::Passed) << b.message;
  EXPECT_EQ(a.green.outcome, Outcome::Passed) << a.green.reason;
  EXPECT_EQ(b.green.outcome, Outcome::Passed) << b.green.reason;
  EXPECT_EQ(a.references_made + b.references_made, n) << "made " << a.references_made << " + " << b.references_made;
  EXPECT_EQ(a.references_made + a.references_read, n);
  EXPECT_EQ(b.references_made + b.references_read, n);
  std::cout << "[reference store] worker 0 made " << a.references_made << ", worker 1 made " << b.references_made
            << " of " << n << "\n";
  fs::remove_all(cache);
}

// The metrics pass waits while another holds the host's metrics lock, and goes on once it is free.
TEST(GpuReferenceStore, MetricsPassWaitsForTheLockAnotherWorkerHolds) {
  REQUIRE_GPU();
  const fs::path cache = temp_dir("evo-metrics-lock");
  WorkerJob job = gemm_green_job(cache);
  job.green = false;
  job.fast = true;
  job.metrics = true;
  job.metrics_lock = (cache / "locks" / "metrics.lock").string();
  WorkerClient w(evo_binary(), 0);
  const WorkerAnswer free_run = w.run(job, 300);  // warm: context, modules, inputs
  ASSERT_EQ(free_run.outcome, Outcome::Passed) << free_run.message;
  if (free_run.metrics.outcome != Outcome::Passed) GTEST_SKIP() << "no metrics on this machine: " << free_run.metrics.reason;

  auto held = FileLock::try_acquire(job.metrics_lock);
  ASSERT_TRUE(held);
  WorkerAnswer waited;
  std::atomic<bool> done{false};
  std::thread t([&] {
    waited = w.run(job, 300);
    done = true;
  });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_FALSE(done.load()) << "the metrics pass ran while the lock was held";
  held.reset();
  t.join();
  ASSERT_EQ(waited.outcome, Outcome::Passed) << waited.message;
  EXPECT_EQ(waited.metrics.outcome, Outcome::Passed) << waited.metrics.reason;
  EXPECT_GE(waited.seconds_metrics, 1.5) << "the wait counts in the metrics seconds";
  fs::remove_all(cache);
}

TEST(GpuCli, EvaluationSurvivesKillRightAfterTheWorkerReports) {
  REQUIRE_GPU();
  const fs::path dir = temp_dir("evo-kill");
  const fs::path db = dir / "e.db";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    execl(evo_binary().c_str(), "evo", "--db", db.c_str(), "--cache", test_cache().c_str(), "eval",
          data("profiles/planted.json").c_str(), "--knobs", "PLANT=0", nullptr);
    _exit(127);
  }
  // Poll the database; kill -9 the moment the evaluation is there.
  bool seen = false, killed = false;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Store> reader;
  while (!seen && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120)) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      pid = -1;
      break;
    }
    // Opened once evo has created the file; a schema still being written is retried.
    if (!reader && fs::exists(db)) {
      try {
        reader = std::make_unique<Store>(db);
      } catch (const UserError&) {
      }
    }
    if (reader) {
      for (const auto& r : reader->runs())
        if (!reader->evaluations_of_run(r.id).empty()) seen = true;
    }
    if (seen) killed = kill(pid, SIGKILL) == 0;
    else std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (pid > 0) waitpid(pid, nullptr, 0);
  reader.reset();
  Store after(db);
  auto runs = after.runs();
  ASSERT_EQ(runs.size(), 1u);
  auto evals = after.evaluations_of_run(runs[0].id);
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_EQ(evals[0].eval.status, Status::Measured) << evals[0].eval.message;
  EXPECT_GT(evals[0].eval.fast.p50_us, 0);
  EXPECT_TRUE(after.check().ok);
  std::cout << "[kill -9] " << (killed ? "killed evo after the row appeared" : "evo had already exited")
            << "; run status " << runs[0].status << "\n";
  fs::remove_all(dir);
}

TEST(GpuCli, EvalPrintsEveryVerdictAndExitsZero) {
  REQUIRE_GPU();
  const fs::path dir = temp_dir("evo-eval");
  CliResult r = run_evo("--db " + (dir / "e.db").string() + " --cache " + test_cache().string() + " eval " +
                  data("profiles/planted.json").string() + " --baseline");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  for (const char* gate : {"compile", "static", "green", "baseline", "fast", "sanitize", "status  measured"})
    EXPECT_NE(r.out.find(gate), std::string::npos) << gate << " missing in:\n" << r.out;
  CliResult bad = run_evo("--db " + (dir / "e.db").string() + " --cache " + test_cache().string() + " eval " +
                    data("profiles/planted.json").string() + " --knobs PLANT=4");
  EXPECT_EQ(bad.code, 1) << bad.out << bad.err;
  fs::remove_all(dir);
}

// A kernel per shape: one search per problem, each timing its own problem, then each problem's best
// exported with a dispatch table.
TEST(GpuCli, ObjectiveAllSearchesEachProblemAndDispatchExportsEachBest) {
  REQUIRE_GPU();
  const fs::path dir = temp_dir("evo-pershape");
  const std::string db = (dir / "e.db").string();
  CliResult r = run_evo("--db " + db + " --cache " + test_cache().string() + " run --profile " +
                        repo("profiles/gemm_fp16.json").string() +
                        " --objective all --budget 4 --strategy random --no-metrics --no-sanitize -q");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("best per problem (gemm_fp16)"), std::string::npos) << r.out;
  {
    Store s(db);
    const auto runs = s.runs();
    ASSERT_EQ(runs.size(), 2u);
    const char* problems[] = {"small", "mission"};  // the profile's order
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(runs[i].status, "finished");
      EXPECT_GT(runs[i].baseline_p50_us, 0) << "each run re-times the baseline on its own problem";
      for (const auto& e : s.evaluations_of_run(runs[i].id)) {
        EXPECT_EQ(e.key.problem, problems[i]);
        if (e.eval.measured()) {
          EXPECT_EQ(e.eval.fast.problem, problems[i]) << "the worker timed another problem";
        }
      }
    }
    // 2048^3 takes far longer than 256^3: the runs did time different problems.
    EXPECT_GT(runs[1].baseline_p50_us, 4 * runs[0].baseline_p50_us);
  }
  CliResult x = run_evo("--db " + db + " export best --dispatch --to " + (dir / "k").string());
  ASSERT_EQ(x.code, 0) << x.out << x.err;
  std::ifstream in(dir / "k" / "gemm_fp16_dispatch.json");
  const auto table = nlohmann::json::parse(in);
  ASSERT_EQ(table["entries"].size(), 2u);
  EXPECT_EQ(table["entries"][0]["problem"], "small");
  EXPECT_EQ(table["entries"][1]["problem"], "mission");
  fs::remove_all(dir);
}

// What was measured under one setup is not read back under another: the same search on the same
// profile reads everything back; once a problem is resized (the same names, knobs and build) every
// candidate is measured again (the first two after the baseline the fastest of the old sizes:
// transfer), and the elites are the new measurements.
TEST(GpuCli, AProblemResizedIsMeasuredAgainNotReadBack) {
  REQUIRE_GPU();
  const fs::path dir = temp_dir("evo-setup");
  const std::string db = (dir / "e.db").string();
  auto write = [&](std::int64_t n) {
    std::ifstream in(repo("profiles/accumulate.json"));
    auto j = nlohmann::json::parse(in);
    j["template"] = repo("templates/examples/accumulate.cu").string();
    j["reference"]["template"] = repo("templates/examples/accumulate_ref.cu").string();
    j["problems"][1]["sizes"]["N"] = n;
    std::ofstream(dir / "accumulate.json") << j.dump(1);
  };
  const std::string run = "--db " + db + " --cache " + test_cache().string() + " run --profile " +
                          (dir / "accumulate.json").string() +
                          " --budget 3 --strategy random --seed 1 --no-metrics --no-sanitize -q";
  write(16777216);
  CliResult first = run_evo(run);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("3 new, 0 read back"), std::string::npos) << first.out;
  CliResult again = run_evo(run);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("0 new, 3 read back"), std::string::npos) << again.out;
  write(1 << 20);
  // The default strategy now: it starts from the fastest of the profile as it was before.
  std::string evo_run = run;
  evo_run.replace(evo_run.find("--strategy random"), 17, "--strategy evo");
  CliResult resized = run_evo(evo_run);
  ASSERT_EQ(resized.code, 0) << resized.out << resized.err;
  EXPECT_NE(resized.out.find("3 new, 0 read back"), std::string::npos) << resized.out;
  Store s(db);
  const auto runs = s.runs();
  ASSERT_EQ(runs.size(), 3u);
  const auto third = s.evaluations_of_run(runs[2].id);
  ASSERT_EQ(third.size(), 3u);
  EXPECT_EQ(third[0].eval.origin.kind, "baseline");
  EXPECT_EQ(third[1].eval.origin.kind, "transfer");
  EXPECT_EQ(third[2].eval.origin.kind, "transfer");
  // 16M elements take longer than 1M: the elites are the resized problem's.
  EXPECT_LT(runs[2].baseline_p50_us * 4, runs[0].baseline_p50_us);
  for (const auto& e : s.elites("accumulate", "main", 0)) EXPECT_EQ(e.run_id, runs[2].id) << e.id;
  fs::remove_all(dir);
}

// ---- GREEN's own safety (issue 34) ----
// tests/data/templates/constant_weights.cu: per-seed __constant__ weights; PLANT=0 is correct at
// every BLOCK and ITEMS, 1 faults, 2 writes 1 MiB past its output, 3 4 KiB before it, 4 into its
// input, 5 64 MiB past its output (past every guard zone). Before the guard zones, 5 wrote into
// the worker's kept reference output and every correct candidate after it failed GREEN
// (docs/results/green-safety.md).
Evaluator& weights() { return evaluator(data("profiles/constant_weights.json").string()); }
Candidate weights_config(int block, int items, int plant) {
  return Candidate{Config{{"BLOCK", block}, {"ITEMS", items}, {"PLANT", plant}}, Origin{"test", "", {}}};
}

// What each PLANT must get, whatever ran before it.
void expect_verdict(const Candidate& c, const Evaluation& e) {
  const std::string what = config_text(c.config) + ": " + e.message;
  switch (c.config.at("PLANT")) {
    case 0:
      EXPECT_EQ(e.status, Status::Measured) << what;
      EXPECT_EQ(e.green.outcome, Outcome::Passed) << what;
      break;
    case 1:
      EXPECT_EQ(e.status, Status::Crashed) << what;
      EXPECT_NE(e.message.find("illegal memory access"), std::string::npos) << what;
      break;
    case 2:
      EXPECT_EQ(e.status, Status::GreenFailed) << what;
      EXPECT_NE(e.message.find("output out: "), std::string::npos) << what;
      EXPECT_NE(e.message.find("past its end"), std::string::npos) << what;
      break;
    case 3:
      EXPECT_EQ(e.status, Status::GreenFailed) << what;
      EXPECT_NE(e.message.find("output out: "), std::string::npos) << what;
      EXPECT_NE(e.message.find("(4096 bytes before its start)"), std::string::npos) << what;
      break;
    case 4:
      EXPECT_EQ(e.status, Status::GreenFailed) << what;
      EXPECT_NE(e.message.find("input in (written by the kernel)"), std::string::npos) << what;
      break;
    case 5:  // into the output's unmapped moat (DeviceBuffer::moated): a fault, on every GPU. Before
             // the moats it landed wherever the driver had put another allocation, and twice on
             // 2 x H200 somewhere nothing watched: measured (docs/results/scale7 §2).
      EXPECT_EQ(e.status, Status::Crashed) << what;
      EXPECT_NE(e.message.find("illegal memory access"), std::string::npos) << what;
      break;
  }
}

TEST(GpuGreenSafety, EveryCorrectConfigurationPassesAfterFaultsAndOutOfBoundsWriters) {
  REQUIRE_GPU();
  std::vector<Candidate> all;
  for (int block : {64, 256})
    for (int items : {1, 4})
      for (int plant = 0; plant <= 5; ++plant) all.push_back(weights_config(block, items, plant));
  // Three orders: as enumerated (each correct one before its planted ones), reversed (after them),
  // and shuffled. The worker is shared by all: what one candidate did must not reach the next.
  std::vector<std::vector<Candidate>> orders{all, std::vector<Candidate>(all.rbegin(), all.rend()), all};
  std::mt19937 rng(34);
  std::shuffle(orders[2].begin(), orders[2].end(), rng);
  int correct = 0;
  for (const auto& order : orders)
    for (const Candidate& c : order) {
      const Evaluation e = weights().evaluate(c);
      expect_verdict(c, e);
      correct += c.config.at("PLANT") == 0 && e.status == Status::Measured;
    }
  EXPECT_EQ(correct, 3 * 4);
}

// The same through `evo run` on every GPU of the machine: one worker per device, each restarted
// after its own faults, none rejecting a correct configuration.
TEST(GpuGreenSafety, ExhaustiveRunOnEveryDeviceMeasuresExactlyTheCorrectConfigurations) {
  REQUIRE_GPU();
  const fs::path dir = temp_dir("evo-safety");
  const std::string db = (dir / "e.db").string();
  CliResult r = run_evo("--db " + db + " --cache " + (dir / "cache").string() + " run --profile " +
                        data("profiles/constant_weights.json").string() +
                        " --strategy exhaustive --budget 100 --devices all --no-sanitize -q");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  Store s(db);
  const auto runs = s.runs();
  ASSERT_EQ(runs.size(), 1u);
  int correct = 0, n = 0;
  for (const auto& e : s.evaluations_of_run(runs[0].id)) {
    ++n;
    expect_verdict(Candidate{e.eval.config, Origin{}}, e.eval);
    correct += e.eval.config.at("PLANT") == 0 && e.eval.status == Status::Measured;
  }
  EXPECT_EQ(n, 54);
  EXPECT_EQ(correct, 9);
  fs::remove_all(dir);
}

// After a worker was killed mid-run: the run finished with `budget` evaluations, each
// configuration once, none with the loss as its verdict, and the database checks clean.
void expect_every_candidate_recorded_once(const fs::path& db, int budget) {
  Store after(db);
  const auto runs = after.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, "finished");
  const auto evals = after.evaluations_of_run(runs[0].id);
  std::set<std::string> configs;
  for (const auto& x : evals) {
    configs.insert(x.eval.config_hash);
    EXPECT_EQ(x.eval.message.find("killed by signal 9"), std::string::npos) << x.eval.message;
    EXPECT_EQ(x.eval.message.find("closed its connection"), std::string::npos) << x.eval.message;
  }
  EXPECT_EQ(static_cast<int>(evals.size()), budget);
  EXPECT_EQ(configs.size(), evals.size()) << "a configuration was recorded twice";
  EXPECT_TRUE(after.check().ok);
}

// A per-GPU worker killed with SIGKILL mid-candidate (issue 35): its candidate is measured again
// on a fresh worker, said in one line, and nothing is lost, duplicated or recorded as a crash.
TEST(GpuCli, AWorkerKilledMidCandidateIsNotACrashAndLosesNothing) {
  REQUIRE_GPU();
  const fs::path dir = temp_dir("evo-kill-w9");
  const fs::path db = dir / "e.db", err = dir / "err";
  const int budget = 24 * std::max(1, device().device_count);  // each worker busy for a while
  // The same run once before, to fill the compile cache: then the killed run's worker is busy from
  // its first candidate on, never idle waiting for a compile when the kill comes (a kill then has
  // no candidate to measure again: call O).
  const CliResult warm = run_evo("--db '" + (dir / "warm.db").string() + "' --cache '" + test_cache().string() +
                                 "' run --profile '" + repo("profiles/gemm_fp16.json").string() + "' --budget " +
                                 std::to_string(budget) + " --strategy random --seed 7 --devices all --no-sanitize -q");
  ASSERT_EQ(warm.code, 0) << warm.out << warm.err;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The run's warnings are log lines on stdout (spdlog's): both streams into one file.
    std::freopen(err.c_str(), "w", stdout);
    ::dup2(::fileno(stdout), 2);
    const std::string b = std::to_string(budget);
    execl(evo_binary().c_str(), "evo", "--db", db.c_str(), "--cache", test_cache().c_str(), "run", "--profile",
          repo("profiles/gemm_fp16.json").c_str(), "--budget", b.c_str(), "--strategy", "random", "--seed", "7",
          "--devices", "all", "--no-sanitize", nullptr);
    _exit(127);
  }
  // The run's `evo worker` children, from /proc.
  auto workers = [&] {
    std::vector<pid_t> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
      const std::string name = e.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream stat(e.path() / "stat"), cmd(e.path() / "cmdline");
      std::string line, args;
      std::getline(stat, line);
      std::getline(cmd, args, '\0');
      std::string rest = line.substr(line.rfind(')') + 2);  // "S <ppid> ..."
      std::istringstream fields(rest);
      char state;
      pid_t ppid = 0;
      fields >> state >> ppid;
      std::string all((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
      if (ppid == pid && all.rfind("worker", 0) == 0) out.push_back(std::stoi(name));  // `evo worker --device N`
    }
    return out;
  };
  // One worker, killed as soon as the run reports its first result: every worker is then inside
  // its first candidates, back to back from a warm cache. A delay from when the worker is first seen
  // (0.6 s, then 1.2 s) came before a worker's first candidate on 4 x H200, whose four start together
  // in 0.8-1.0 s, and after the last on 2 x H200, which measured the 48 in 1.6 s (calls A and C,
  // tenth session): a worker killed idle has nothing to measure again. One kill: a second one
  // lands in the same candidate's re-run, which is then its crash by design ("it died twice").
  auto reported = [&] { return file_text(err).find("new best") != std::string::npos; };
  int kills = 0;
  std::set<pid_t> killed;
  const auto t0 = std::chrono::steady_clock::now();
  while (kills < 1 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120)) {
    int st = 0;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      pid = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (!reported()) continue;
    for (pid_t w : workers()) {
      if (killed.count(w)) continue;  // a killed one lingers until reaped
      if (kill(w, SIGKILL) == 0) {
        killed.insert(w);
        ++kills;
        break;
      }
    }
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  ASSERT_GT(kills, 0) << "the run ended before a worker could be killed";
  const std::string said = file_text(err);
  EXPECT_NE(said.find("measured again on a fresh worker"), std::string::npos) << said;
  expect_every_candidate_recorded_once(db, budget);
  std::cout << "[kill -9 a worker] " << kills << " kill(s); the run said:\n" << said.substr(0, 600) << "\n";
  fs::remove_all(dir);
}

// ---- the pool of warm workers on the GPU (engine/pool.h) ----

// A pool in a folder of the test's own, stopped at the end.
struct TestPool {
  test::TempDir dir;
  std::string kept;
  CliResult started;
  explicit TestPool(const std::string& devices) {
    kept = std::getenv("EVO_POOL_DIR") ? std::getenv("EVO_POOL_DIR") : "";
    ::setenv("EVO_POOL_DIR", (dir.path / "pool").c_str(), 1);
    started = run_evo("pool start --devices " + devices + " --idle-exit 300");
  }
  // Each GPU's worker pid of `role` (measure, profile) once every worker answers (after a fault
  // the supervisor starts a fresh one).
  std::map<int, int> ready_pids(double within_s = 60, const std::string& role = "measure") {
    const auto t0 = std::chrono::steady_clock::now();
    for (;;) {
      const CliResult st = run_evo("pool status --json");
      const auto j = nlohmann::json::parse(st.out, nullptr, false);
      std::map<int, int> pids;
      bool all = st.code == 0 && j.is_object() && j.contains("devices");
      if (all)
        for (const auto& d : j["devices"]) {
          all = all && d.value("error", std::string("x")).empty() && !d.value("busy", true);
          if (d.value("role", std::string()) == role) pids[d.value("gpu", -1)] = d.value("pid", -1);
        }
      if (all) return pids;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > within_s) return {};
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  ~TestPool() {
    run_evo("pool stop");
    ::setenv("EVO_POOL_DIR", kept.c_str(), 1);
  }
};

// Runs attached to the pool judge as runs without it, through kernels that kill the pool's
// workers' contexts (the run goes on with workers of its own; the pool starts fresh ones), and the
// next run attaches again to what the pool made.
TEST(GpuPool, RunsOnThePoolJudgeAsWithoutItThroughFaults) {
  REQUIRE_GPU();
  TestPool pool("all");
  ASSERT_EQ(pool.started.code, 0) << pool.started.out << pool.started.err;
  EXPECT_NE(pool.started.out.find(", ready"), std::string::npos) << pool.started.out;
  const std::map<int, int> before = pool.ready_pids();
  ASSERT_FALSE(before.empty());
  for (int round = 0; round < 2; ++round) {
    const fs::path dir = temp_dir("evo-pool-run");
    const std::string db = (dir / "e.db").string();
    const CliResult r = run_evo("--db " + db + " --cache " + (dir / "cache").string() + " run --profile " +
                                data("profiles/constant_weights.json").string() +
                                " --strategy exhaustive --budget 100 --devices all --no-sanitize -q");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("the pool's warm worker"), std::string::npos) << "round " << round << ":\n" << r.out;
    Store s(db);
    int correct = 0, n = 0;
    for (const auto& e : s.evaluations_of_run(s.runs().at(0).id)) {
      ++n;
      expect_verdict(Candidate{e.eval.config, Origin{}}, e.eval);
      correct += e.eval.config.at("PLANT") == 0 && e.eval.status == Status::Measured;
    }
    EXPECT_EQ(n, 54);
    EXPECT_EQ(correct, 9);
    const std::map<int, int> after = pool.ready_pids();
    ASSERT_EQ(after.size(), before.size()) << "every GPU's worker ready again";
    if (round == 0) {
      EXPECT_NE(after, before) << "a kernel that killed a context ended that pool worker";
    }
    fs::remove_all(dir);
  }
  const CliResult stop = run_evo("pool stop");
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_FALSE(fs::exists(pool.dir.path / "pool" / "pool.json"));
}

// CUPTI in a process shifts that process's timings for good (docs/results/scale10, section 3):
// a run's metrics are collected by each GPU's profiling worker, and its measuring worker, which
// judges and times, never loads CUPTI (whose nvperf library it would then have mapped). Between
// runs the pool's profiling worker holds no profiler session: a run of its own (EVO_POOL=0) on
// the same GPU collects its metrics too (a session kept by the idle pool failed all of them, call H).
TEST(GpuPool, MeasuringWorkersNeverLoadCuptiAndTheProfilingWorkersCollectTheMetrics) {
  REQUIRE_GPU();
  TestPool pool("0");
  ASSERT_EQ(pool.started.code, 0) << pool.started.out << pool.started.err;
  EXPECT_NE(pool.started.out.find("profiling worker"), std::string::npos) << pool.started.out;
  const std::map<int, int> measure = pool.ready_pids(60, "measure"), profile = pool.ready_pids(60, "profile");
  ASSERT_EQ(measure.size(), 1u);
  ASSERT_EQ(profile.size(), 1u);
  auto maps = [](int pid) { return file_text("/proc/" + std::to_string(pid) + "/maps"); };
  EXPECT_NE(maps(profile.begin()->second).find("nvperf"), std::string::npos) << "a profiling worker makes CUPTI's tables at its start";
  const fs::path dir = temp_dir("evo-pool-roles");
  const std::string db = (dir / "e.db").string();
  const std::string args = "--cache '" + test_cache().string() + "' run --profile '" +
                           repo("profiles/gemm_fp16.json").string() + "' --budget 24 --strategy random --seed 3 --no-sanitize";
  const CliResult r = run_evo("--db '" + db + "' " + args);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("the pool's warm worker"), std::string::npos) << r.out;
  EXPECT_EQ(pool.ready_pids(60, "measure"), measure) << "the same workers served the run";
  EXPECT_EQ(maps(measure.begin()->second).find("nvperf"), std::string::npos)
      << "the measuring worker loaded CUPTI:\n" << r.out;
  auto count = [](const std::string& file, int* measured, int* profiled) {
    Store s(file);
    for (const auto& e : s.evaluations_of_run(s.runs().at(0).id)) {
      *measured += e.eval.status == Status::Measured;
      *profiled += e.eval.metrics.outcome == Outcome::Passed && !e.eval.metrics.values.empty();
    }
  };
  int measured = 0, profiled = 0;
  count(db, &measured, &profiled);
  EXPECT_GT(measured, 0);
  EXPECT_GT(profiled, 0) << "the run's best have their metrics, from the profiling worker:\n" << r.out;
  const std::string own_db = (dir / "own.db").string();
  const CliResult own = run_evo_env("EVO_POOL=0", "--db '" + own_db + "' " + args);
  ASSERT_EQ(own.code, 0) << own.out << own.err;
  EXPECT_EQ(own.out.find("the pool's warm worker"), std::string::npos) << own.out;
  int own_measured = 0, own_profiled = 0;
  count(own_db, &own_measured, &own_profiled);
  EXPECT_GT(own_measured, 0);
  EXPECT_GT(own_profiled, 0) << "beside the idle pool, a run's own profiling worker collects its metrics:\n" << own.out;
  fs::remove_all(dir);
}

// A pool's profiling worker enables its profiler session at the pool's start and keeps it between
// runs (each run's first collection would otherwise pay the first Start, 0.17-0.42 s): until a
// process profiling there without the pool asks it to let go (that run still gets its metrics),
// until it has been idle EVO_POOL_KEEP_PROFILER_S seconds, or until `evo pool release`.
TEST(GpuPool, AnIdlePoolKeepsItsProfilerSessionUntilAskedOrIdleTooLong) {
  REQUIRE_GPU();
  const char* was = std::getenv("EVO_POOL_KEEP_PROFILER_S");
  const std::string kept_env = was ? was : "";
  ::setenv("EVO_POOL_KEEP_PROFILER_S", "4", 1);  // the pool's workers inherit it
  TestPool pool("0");
  if (kept_env.empty()) ::unsetenv("EVO_POOL_KEEP_PROFILER_S");
  else ::setenv("EVO_POOL_KEEP_PROFILER_S", kept_env.c_str(), 1);
  ASSERT_EQ(pool.started.code, 0) << pool.started.out << pool.started.err;
  ASSERT_EQ(pool.ready_pids(60, "profile").size(), 1u);
  auto warm = [] {
    const CliResult st = run_evo("pool status --json");
    const auto j = nlohmann::json::parse(st.out, nullptr, false);
    for (const auto& d : j.value("devices", nlohmann::json::array()))
      if (d.value("role", std::string()) == "profile") return d.value("profiler_warm", false);
    ADD_FAILURE() << "no profiling worker in: " << st.out;
    return false;
  };
  EXPECT_TRUE(warm()) << "primed at the pool's start";
  const fs::path dir = temp_dir("evo-pool-keep");
  const std::string args = "--cache '" + test_cache().string() + "' run --profile '" +
                           repo("profiles/gemm_fp16.json").string() + "' --budget 12 --strategy random --seed 5 --no-sanitize";
  auto profiled = [](const std::string& file) {
    Store s(file);
    int n = 0;
    for (const auto& e : s.evaluations_of_run(s.runs().at(0).id))
      n += e.eval.metrics.outcome == Outcome::Passed && !e.eval.metrics.values.empty();
    return n;
  };
  const std::string db1 = (dir / "pooled.db").string();
  const CliResult pooled = run_evo("--db '" + db1 + "' " + args);
  ASSERT_EQ(pooled.code, 0) << pooled.out << pooled.err;
  EXPECT_GT(profiled(db1), 0) << pooled.out;
  EXPECT_TRUE(warm()) << "kept across the run";
  const std::string db2 = (dir / "own.db").string();
  const CliResult own = run_evo_env("EVO_POOL=0", "--db '" + db2 + "' " + args);
  ASSERT_EQ(own.code, 0) << own.out << own.err;
  EXPECT_GT(profiled(db2), 0) << "a run without the pool asked it to let go, and profiled:\n" << own.out;
  EXPECT_FALSE(warm()) << "ended on that run's request";
  const std::string db3 = (dir / "again.db").string();
  const CliResult again = run_evo("--db '" + db3 + "' " + args);
  ASSERT_EQ(again.code, 0) << again.out << again.err;
  EXPECT_GT(profiled(db3), 0) << again.out;
  EXPECT_TRUE(warm()) << "enabled again by that run's collections, and kept";
  std::this_thread::sleep_for(std::chrono::milliseconds(5500));
  EXPECT_FALSE(warm()) << "ended after 4 idle seconds";
  const std::string db4 = (dir / "last.db").string();
  const CliResult last = run_evo("--db '" + db4 + "' " + args);
  ASSERT_EQ(last.code, 0) << last.out << last.err;
  EXPECT_TRUE(warm());
  const CliResult release = run_evo("pool release");
  EXPECT_EQ(release.code, 0) << release.out << release.err;
  EXPECT_NE(release.out.find("profiler sessions ended on GPU 0"), std::string::npos) << release.out;
  EXPECT_FALSE(warm()) << "`evo pool release` ended it (for ncu)";
  fs::remove_all(dir);
}

// A pool's worker killed with SIGKILL mid-candidate: as a run's own worker (the test above it),
// its candidate is measured again, nothing is lost or duplicated, and the pool starts a fresh one.
TEST(GpuPool, APoolWorkerKilledMidCandidateIsNotACrashAndLosesNothing) {
  REQUIRE_GPU();
  TestPool pool("0");
  ASSERT_EQ(pool.started.code, 0) << pool.started.out << pool.started.err;
  const fs::path dir = temp_dir("evo-pool-kill");
  const fs::path db = dir / "e.db", out = dir / "out";
  const int budget = 48;
  const std::string common = "--cache '" + test_cache().string() + "' run --profile '" +
                             repo("profiles/gemm_fp16.json").string() + "' --budget " + std::to_string(budget) +
                             " --strategy random --seed 7 --no-sanitize";
  const CliResult warm = run_evo("--db '" + (dir / "warm.db").string() + "' " + common + " -q");
  ASSERT_EQ(warm.code, 0) << warm.out << warm.err;
  const std::map<int, int> pids = pool.ready_pids();
  ASSERT_EQ(pids.size(), 1u);
  const pid_t target = pids.begin()->second;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen(out.c_str(), "w", stdout);
    ::dup2(::fileno(stdout), 2);
    execl("/bin/sh", "sh", "-c", ("exec '" + evo_binary() + "' --db '" + db.string() + "' " + common).c_str(), nullptr);
    _exit(127);
  }
  // Into its first candidates: killed once the run reports its first result.
  for (int i = 0; i < 3000 && file_text(out).find("new best") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the run ended before its worker could be killed";
  ASSERT_EQ(kill(target, SIGKILL), 0);
  waitpid(pid, &status, 0);
  const std::string said = file_text(out);
  EXPECT_NE(said.find("the pool's warm worker"), std::string::npos) << said;
  EXPECT_NE(said.find("the pool's worker (pid " + std::to_string(target) + ") closed its connection"), std::string::npos)
      << said;
  EXPECT_NE(said.find("measured again on a fresh worker"), std::string::npos) << said;
  expect_every_candidate_recorded_once(db, budget);
  const std::map<int, int> again = pool.ready_pids();
  ASSERT_EQ(again.size(), 1u) << "the pool started a fresh worker";
  EXPECT_NE(again.begin()->second, target);
  std::cout << "[kill -9 a pool worker] the run said:\n" << said.substr(0, 800) << "\n";
  fs::remove_all(dir);
}

// A run killed with SIGKILL while its candidate hangs (the planted kernel whose block (0,0) never
// finishes) leaves the pool's worker in that kernel, with no watchdog left to end it: the worker
// ends itself once the step is past its budget (ClientWatch), and the pool has a fresh one ready.
TEST(GpuPool, AWorkerLeftInAHungKernelByAKilledRunEndsItselfAndThePoolGoesOn) {
  REQUIRE_GPU();
  TestPool pool("0");
  ASSERT_EQ(pool.started.code, 0) << pool.started.out << pool.started.err;
  const std::map<int, int> before = pool.ready_pids();
  ASSERT_EQ(before.size(), 1u);
  const fs::path dir = temp_dir("evo-pool-hang");
  const std::string knobs = "TILE=16,PLANT=3";
  // Built beforehand, so that the job reaches the hanging launch right after the run attaches.
  const CliResult built = run_evo("--cache '" + test_cache().string() + "' compile '" + data("profiles/planted.json").string() +
                                  "' --knobs " + knobs);
  ASSERT_EQ(built.code, 0) << built.out << built.err;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::freopen((dir / "out").c_str(), "w", stdout);
    ::dup2(::fileno(stdout), 2);
    execl(evo_binary().c_str(), "evo", "--db", (dir / "e.db").c_str(), "--cache", test_cache().c_str(), "eval",
          data("profiles/planted.json").c_str(), "--knobs", knobs.c_str(), "--no-metrics", nullptr);
    _exit(127);
  }
  // Inside the hanging launch (its budget is the profile's 2 s), before the run's own watchdog.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, WNOHANG), 0) << "the run ended before it could be killed";
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  const auto t0 = std::chrono::steady_clock::now();
  const std::map<int, int> after = pool.ready_pids(30);
  ASSERT_EQ(after.size(), 1u) << "the pool's worker for GPU 0 never came back";
  EXPECT_NE(after.begin()->second, before.begin()->second) << "the hung worker ended, a fresh one took its place";
  std::cout << "[hung pool worker] ready again after "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
  const std::string said = file_text(pool.dir.path / "pool" / "pool.log");
  EXPECT_NE(said.find("is gone and green: candidate launch"), std::string::npos) << said;
  fs::remove_all(dir);
}

// ---- no GPU needed ----

TEST(CliEval, WithoutADeviceExitsTwoWithOneLine) {
  if (device().present) GTEST_SKIP() << "a CUDA device is present: " << device().name;
  const fs::path dir = temp_dir("evo-nodev");
  CliResult r = run_evo("--db " + (dir / "e.db").string() + " eval " + data("profiles/planted.json").string() + " --baseline");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("evo: no CUDA device is present: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(dir / "e.db"));  // nothing stored without a device
  fs::remove_all(dir);
}

// A worker binary that is not there is said by name when evo first asks for the device.
TEST(WorkerProtocol, MissingBinaryIsNamedAtTheProbe) {
  const fs::path dir = temp_dir("evo-noworker");
  WorkerClient w((dir / "no-such-evo").string(), 0);
  try {
    w.probe(5);
    FAIL() << "a probe through a missing binary answered";
  } catch (const UserError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("the GPU worker binary " + (dir / "no-such-evo").string() + " cannot be run: No such file"),
              std::string::npos) << msg;
  }
  fs::remove_all(dir);
}

// A run's profiling worker (engine/worker.h, WorkerRole) is started as one, and its spans go to a
// track of their own beside its GPU's measuring worker's ("gpu 0 profiler"), so that a trace tells
// the two apart (scripts/trace-summary.py).
TEST(WorkerProtocol, AProfilingWorkerIsStartedAsOneAndTracedApart) {
  const fs::path dir = temp_dir("evo-role-trace");
  const fs::path trace = dir / "trace.jsonl";
  const char* kept = std::getenv("EVO_TRACE");
  const std::string was = kept ? kept : "";
  ::setenv("EVO_TRACE", trace.c_str(), 1);
  std::string cmdline;
  {
    WorkerClient w(evo_binary(), 0, "", WorkerRole::Profile);
    w.probe(30);
    cmdline = file_text("/proc/" + std::to_string(w.pid()) + "/cmdline");
  }
  if (was.empty()) ::unsetenv("EVO_TRACE");
  else ::setenv("EVO_TRACE", was.c_str(), 1);
  EXPECT_NE(cmdline.find(std::string("--role") + '\0' + "profile"), std::string::npos) << cmdline;
  const std::string t = file_text(trace);
  EXPECT_NE(t.find("\"tid\":\"gpu 0 profiler\""), std::string::npos) << t;
  EXPECT_EQ(t.find("\"tid\":\"gpu 0\""), std::string::npos) << "a profiling worker's span on the measuring track:\n" << t;
  fs::remove_all(dir);
}

// A warm probe that names the run's profile has the worker read it then, after its answer and
// its context (the first job's 15-21 ms on each lane, and on the end's metrics: scale17); one that
// names none reads nothing ahead. Each worker is its own (EVO_POOL=0): a pool's traces elsewhere.
TEST(WorkerProtocol, AWarmProbeNamingTheProfileReadsItAhead) {
  REQUIRE_GPU();
  const fs::path dir = temp_dir("evo-read-ahead");
  const fs::path trace = dir / "trace.jsonl";
  const std::string profile = repo("profiles/sdpa_fp8.json").string();
  auto keep = [](const char* name) -> std::optional<std::string> {
    const char* v = std::getenv(name);
    if (v) return std::string(v);
    return std::nullopt;
  };
  const std::optional<std::string> was_trace = keep("EVO_TRACE"), was_pool = keep("EVO_POOL");
  ::setenv("EVO_TRACE", trace.c_str(), 1);
  ::setenv("EVO_POOL", "0", 1);
  DeviceInfo first, second;
  {
    WorkerClient w(evo_binary(), 0);
    first = w.probe(30, /*warm=*/true, profile);
  }  // asked to quit: its loop reads that after the read, and it is waited for
  {
    WorkerClient w(evo_binary(), 0);
    second = w.probe(30, /*warm=*/true);
  }
  for (const auto& [name, v] : {std::pair{"EVO_TRACE", was_trace}, std::pair{"EVO_POOL", was_pool}})
    if (v) ::setenv(name, v->c_str(), 1);
    else ::unsetenv(name);
  EXPECT_TRUE(first.present) << first.error;
  EXPECT_TRUE(second.present) << second.error;
  const std::string t = file_text(trace);
  std::size_t reads = 0;
  for (std::size_t at = t.find("profile read ahead"); at != std::string::npos; at = t.find("profile read ahead", at + 1)) ++reads;
  EXPECT_EQ(reads, 1u) << "one worker was named the profile, the other none:\n" << t;
  EXPECT_NE(t.find(profile), std::string::npos) << "the span names the profile it read:\n" << t;
  EXPECT_LT(t.find("context and stream made ahead"), t.find("profile read ahead")) << "the context first:\n" << t;
  fs::remove_all(dir);
}

// What GREEN and the fill memo may keep: the floor until a device is probed, then the caller's share
// of its memory where that is more (an 80 GB H100 at an eighth: 10 GB; a machine without a GPU: the floor).
TEST(Buffers, KeptCopiesAreBoundByAShareOfTheProbedDevicesMemory) {
  const std::size_t floor = std::size_t(4) << 30;
  const DeviceInfo d = probe_device(0);
  if (!d.present) {
    EXPECT_EQ(kept_bytes_bound(floor, 0.25), floor);
    EXPECT_EQ(kept_bytes_bound(0, 0.125), 0u);
    return;
  }
  const auto mem = static_cast<double>(d.global_mem_bytes);
  EXPECT_EQ(kept_bytes_bound(0, 0.25), static_cast<std::size_t>(mem * 0.25));
  EXPECT_EQ(kept_bytes_bound(0, 0.125), static_cast<std::size_t>(mem * 0.125));
  EXPECT_EQ(kept_bytes_bound(floor, 0.125), std::max(floor, static_cast<std::size_t>(mem * 0.125)));
  EXPECT_EQ(kept_bytes_bound(std::size_t(1) << 50, 0.25), std::size_t(1) << 50);
}

TEST(Buffers, Fp8RoundTripsRepresentableValuesExactly) {
  const std::vector<double> e4m3 = {0, 0.5, -1.75, 448, -448, 0.015625, 240};
  auto b = encode(DType::FP8_E4M3, e4m3, false, nullptr);
  ASSERT_EQ(b.size(), e4m3.size());
  for (std::size_t i = 0; i < e4m3.size(); ++i) EXPECT_EQ(decode_one(DType::FP8_E4M3, &b[i]), e4m3[i]);
  const std::vector<double> e5m2 = {57344, -0.25, 3, 1.0 / 1024};
  b = encode(DType::FP8_E5M2, e5m2, false, nullptr);
  for (std::size_t i = 0; i < e5m2.size(); ++i) EXPECT_EQ(decode_one(DType::FP8_E5M2, &b[i]), e5m2[i]);
  // Out of range saturates to the largest finite value rather than becoming Inf/NaN.
  b = encode(DType::FP8_E4M3, {1e6}, false, nullptr);
  EXPECT_EQ(decode_one(DType::FP8_E4M3, &b[0]), 448);
}

TEST(Buffers, ScaledFp8UsesTheWholeRangeAndDescalesBack) {
  std::vector<double> v = draw_values(InitSpec{InitSpec::Kind::Normal, 0, 3, {}, {}}, 1000, 7, 0, "Q");
  float descale = 0;
  auto b = encode(DType::FP8_E4M3, v, true, &descale);
  double amax = 0, back_max = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    amax = std::max(amax, std::fabs(v[i]));
    const double back = decode_one(DType::FP8_E4M3, &b[i]);
    back_max = std::max(back_max, std::fabs(back));
    EXPECT_NEAR(back * descale, v[i], std::fabs(v[i]) / 8 + 1e-3 * amax) << i;  // 3 mantissa bits
  }
  EXPECT_NEAR(descale, amax / 448, 1e-6 * amax);
  EXPECT_EQ(back_max, 448);  // the largest value lands on the top of the range
}

TEST(Buffers, PoisonIsNaNInEveryFloatFormatAndDetectedBitExactly) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::FP8_E4M3, DType::FP8_E5M2}) {
    std::vector<std::uint8_t> e(dtype_bytes(t), poison_byte(t));
    EXPECT_TRUE(is_poison(t, e.data())) << dtype_name(t);
    EXPECT_TRUE(std::isnan(decode_one(t, e.data()))) << dtype_name(t);
    auto written = encode(t, {std::nan("")}, false, nullptr);
    // A NaN the kernel wrote is not the poison pattern (unless it happens to be all ones).
    if (t == DType::F32 || t == DType::F16) {
      EXPECT_FALSE(is_poison(t, written.data())) << dtype_name(t);
    }
  }
  std::vector<std::uint8_t> i(4, poison_byte(DType::I32));
  EXPECT_TRUE(is_poison(DType::I32, i.data()));
  EXPECT_EQ(decode_one(DType::I32, i.data()), static_cast<double>(static_cast<std::int32_t>(0x80808080u)));
  EXPECT_EQ(index_text({2, 3, 4}, 23), "[1,2,3]");
}

// Fills of the integer types are rounded to nearest and held to the type's range (a uniform draw on
// [0, 256) into u8 is 0..255, never a wrapped 0), and read back exactly; f64 keeps every bit.
TEST(Buffers, IntegerFillsRoundAndSaturateToTheirRange) {
  const std::vector<double> v = {-1e30, -129.4, -1.5, 0.49, 127.5, 255.6, 300, 70000, 5e9, 1e30};
  const std::map<DType, std::vector<double>> want = {
      {DType::U8, {0, 0, 0, 0, 128, 255, 255, 255, 255, 255}},
      {DType::I8, {-128, -128, -2, 0, 127, 127, 127, 127, 127, 127}},
      {DType::U16, {0, 0, 0, 0, 128, 256, 300, 65535, 65535, 65535}},
      {DType::I16, {-32768, -129, -2, 0, 128, 256, 300, 32767, 32767, 32767}},
      {DType::U32, {0, 0, 0, 0, 128, 256, 300, 70000, 4294967295.0, 4294967295.0}},
      {DType::I64, {-9223372036854775808.0, -129, -2, 0, 128, 256, 300, 70000, 5e9, 9223372036854775807.0}},
  };
  for (const auto& [t, expect] : want) {
    const auto bytes = encode(t, v, false, nullptr);
    ASSERT_EQ(bytes.size(), v.size() * dtype_bytes(t)) << dtype_name(t);
    for (std::size_t i = 0; i < v.size(); ++i)
      EXPECT_EQ(decode_one(t, bytes.data() + i * dtype_bytes(t)), expect[i]) << dtype_name(t) << " " << v[i];
  }
  const double third = 1.0 / 3.0;
  EXPECT_EQ(decode_one(DType::F64, encode(DType::F64, {third}, false, nullptr).data()), third);
  for (DType t : all_dtypes()) EXPECT_EQ(parse_dtype(dtype_name(t)), t) << dtype_name(t);
}

HostTensor tensor(const std::string& name, std::vector<std::int64_t> shape, const std::vector<double>& v) {
  HostTensor t;
  t.name = name;
  t.dtype = DType::F32;
  t.shape = std::move(shape);
  t.bytes = encode(DType::F32, v, false, nullptr);
  return t;
}

TEST(GreenCompare, GivesTheFiguresOfAWrongOutput) {
  GreenThresholds th;
  th.atol = 0.01;
  th.rtol = 0;
  const HostTensor ref = tensor("O", {2, 3}, {1, 2, 3, 4, 5, 6});
  const HostTensor cand = tensor("O", {2, 3}, {1, 2, 3, 4, 5.5, 6.005});
  const OutputCompare o = compare_output(cand, ref, th);
  EXPECT_EQ(o.bad, 1);
  EXPECT_NEAR(o.bad_pct, 100.0 / 6, 1e-9);
  EXPECT_NEAR(o.max_abs, 0.5, 1e-6);
  EXPECT_NEAR(o.mean_abs, 0.505 / 6, 1e-6);
  EXPECT_NE(o.failure.find("O[1,1] = 5.5, ref 5"), std::string::npos) << o.failure;
  EXPECT_TRUE(compare_output(ref, ref, th).failure.empty());
}

// Outputs of millions of elements are compared in parallel ranges: the figures and the elements
// named must be those of one sequential pass.
TEST(GreenCompare, SplitComparisonOfABigOutputNamesTheSameElements) {
  GreenThresholds th;
  th.atol = 0.01;
  th.rtol = 0;
  const std::int64_t n = 3 * (std::int64_t(1) << 20) + 17;
  std::vector<double> r(static_cast<std::size_t>(n)), c;
  for (std::int64_t i = 0; i < n; ++i) r[i] = static_cast<double>(i % 1000) * 1e-3;
  c = r;
  c[100] += 0.25;      // first bad element, in the first range
  c[3000000] += 0.5;   // the worst (reference 0 there), in the last range
  c[1500000] += 0.5;   // exactly as bad, earlier: a tie keeps the first
  const OutputCompare o = compare_output(tensor("O", {n}, c), tensor("O", {n}, r), th);
  EXPECT_EQ(o.bad, 3);
  EXPECT_NEAR(o.max_abs, 0.5, 1e-6);
  EXPECT_NEAR(o.mean_abs, 1.25 / static_cast<double>(n), 1e-9);
  EXPECT_NE(o.failure.find("first O[100]"), std::string::npos) << o.failure;
  EXPECT_NE(o.failure.find("at O[1500000]"), std::string::npos) << o.failure;
}

TEST(GreenCompare, RejectsUnwrittenAndNaNAndDistrustsABadReference) {
  GreenThresholds th;
  const HostTensor ref = tensor("O", {4}, {1, 2, 3, 4});
  HostTensor cand = tensor("O", {4}, {1, 2, 3, 4});
  std::fill(cand.bytes.begin() + 8, cand.bytes.begin() + 12, poison_byte(DType::F32));
  OutputCompare o = compare_output(cand, ref, th);
  EXPECT_EQ(o.unwritten, 1);
  EXPECT_NE(o.failure.find("unwritten"), std::string::npos) << o.failure;
  EXPECT_NE(o.failure.find("O[2]"), std::string::npos) << o.failure;

  o = compare_output(tensor("O", {4}, {1, std::nan(""), 3, 4}), ref, th);
  EXPECT_EQ(o.nan, 1);
  EXPECT_NE(o.failure.find("NaN"), std::string::npos) << o.failure;

  o = compare_output(ref, tensor("O", {4}, {1, 2, INFINITY, 4}), th);
  EXPECT_TRUE(o.reference_bad);
  EXPECT_NE(o.failure.find("reference produced inf"), std::string::npos) << o.failure;
}

TEST(WorkerProtocol, FramesSurviveAnySplitOfTheByteStream) {
  const std::vector<std::string> msgs = {R"({"type":"probe"})", std::string(70000, 'x'), "", "{\"a\":\"\\u0000\"}"};
  std::string stream;
  for (const auto& m : msgs) stream += encode_frame(m);
  for (std::size_t chunk : {1u, 3u, 4u, 4096u, 100000u}) {
    FrameReader r;
    std::vector<std::string> got;
    for (std::size_t off = 0; off < stream.size(); off += chunk) {
      r.feed(stream.data() + off, std::min(chunk, stream.size() - off));
      while (auto f = r.next()) got.push_back(*f);
    }
    EXPECT_EQ(got, msgs) << "chunk " << chunk;
    EXPECT_FALSE(r.partial());
  }
  FrameReader half;
  const std::string f = encode_frame("hello");
  half.feed(f.data(), 6);
  EXPECT_FALSE(half.next());
  EXPECT_TRUE(half.partial());
}

// Metrics passes take turns on a host; a candidate that finds another GPU profiling waits only if
// it is a new best (issue 35). The lock is a real flock, held here as another worker would.
TEST(MetricsTurn, FarFromTheBestNeverAFreeLockAlwaysAWaitOnlyForANewBest) {
  test::TempDir d;
  WorkerJob job;
  job.metrics = true;
  job.metrics_max_p50_us = 110;
  job.metrics_wait_max_p50_us = 100;
  int beats = 0;
  auto waiting = [&] { ++beats; };

  MetricsTurn far = take_metrics_turn(job, 120, waiting);  // above 1.1 x the best: never
  EXPECT_FALSE(far.collect);
  EXPECT_NE(far.reason.find("120.00 us is above 110.00 us"), std::string::npos) << far.reason;

  MetricsTurn unlocked = take_metrics_turn(job, 105, waiting);  // no lock named: a lone worker
  EXPECT_TRUE(unlocked.collect);
  EXPECT_FALSE(unlocked.lock.has_value());

  job.metrics_lock = (d.path / "locks" / "metrics.lock").string();
  {
    MetricsTurn free_turn = take_metrics_turn(job, 105, waiting);  // free: taken, near-best or not
    EXPECT_TRUE(free_turn.collect);
    ASSERT_TRUE(free_turn.lock.has_value());
    EXPECT_FALSE(FileLock::try_acquire(job.metrics_lock).has_value()) << "the turn holds the lock during the pass";
  }
  EXPECT_EQ(beats, 0);

  std::optional<FileLock> other = FileLock::try_acquire(job.metrics_lock);  // another GPU profiles
  ASSERT_TRUE(other.has_value());
  const auto t0 = std::chrono::steady_clock::now();
  MetricsTurn busy = take_metrics_turn(job, 105, waiting);  // not a new best: goes on without
  EXPECT_FALSE(busy.collect);
  EXPECT_FALSE(busy.lock.has_value());
  EXPECT_NE(busy.reason.find("another GPU's metrics pass was running"), std::string::npos) << busy.reason;
  EXPECT_NE(busy.reason.find("(100.00 us)"), std::string::npos) << busy.reason;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);

  // A new best waits its turn, beating, and gets the pass once the other is done.
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    other.reset();
  });
  MetricsTurn best = take_metrics_turn(job, 95, waiting);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  release.join();
  EXPECT_TRUE(best.collect);
  EXPECT_TRUE(best.lock.has_value());
  EXPECT_GE(waited, 0.35);
  EXPECT_GE(beats, 1);

  // Without a best to beat (--metrics-all, a metric gate): every candidate waits.
  job.metrics_wait_max_p50_us = 0;
  job.metrics_max_p50_us = 0;
  std::thread release2([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    best.lock.reset();
  });
  MetricsTurn all = take_metrics_turn(job, 500, waiting);
  release2.join();
  EXPECT_TRUE(all.collect);
  EXPECT_TRUE(all.lock.has_value());
}

// A stand-in worker that answers the probe with what it was started with: its CUDA_VISIBLE_DEVICES,
// its arguments and EVO_WORKER_GPU (no device where it is shown "GPU-gone"). No GPU: the
// coordinator's side of the device each worker sees.
TEST(WorkerProtocol, AWorkerGivenItsDeviceSeesItAloneAsItsDeviceZero) {
  test::TempDir dir;
  const auto script = dir.path / "fake-worker";
  std::ofstream(script) << R"PY(#!/usr/bin/env python3
import json, os, struct, sys
n = struct.unpack("<I", sys.stdin.buffer.read(4))[0]
sys.stdin.buffer.read(n)
seen = os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)") + "|" + " ".join(sys.argv[1:]) + "|" + os.environ.get("EVO_WORKER_GPU", "")
present = os.environ.get("CUDA_VISIBLE_DEVICES") != "GPU-gone"
reply = json.dumps({"type": "device", "present": present, "error": seen}).encode()
sys.stdout.buffer.write(struct.pack("<I", len(reply)) + reply)
sys.stdout.buffer.flush()
)PY";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const char* before = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string kept = before ? before : "";
  setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa,GPU-bbbb,7", 1);
  unsetenv("EVO_WORKERS_SEE_ALL");
  EXPECT_EQ(visible_entry(0), "GPU-aaaa");
  EXPECT_EQ(visible_entry(2), "7");
  EXPECT_EQ(visible_entry(3), "") << "past the list: the worker sees every device and says it is not there";
  EXPECT_EQ(WorkerClient(script.string(), 1, visible_entry(1)).probe(10).error, "GPU-bbbb|worker --device 0|1")
      << "its trace still names it GPU 1";
  EXPECT_EQ(WorkerClient(script.string(), 2).probe(10).error, "GPU-aaaa,GPU-bbbb,7|worker --device 2|2");
  // A device that does not answer when seen alone: the worker is started again seeing them all.
  WorkerClient gone(script.string(), 0, "GPU-gone");
  const DeviceInfo again = gone.probe(10);
  EXPECT_TRUE(again.present);
  EXPECT_EQ(again.error, "GPU-aaaa,GPU-bbbb,7|worker --device 0|0");
  EXPECT_EQ(gone.visible(), "");
  EXPECT_EQ(gone.restarts(), 0) << "a second look, not a restart after a fault";
  setenv("EVO_WORKERS_SEE_ALL", "1", 1);
  EXPECT_EQ(visible_entry(1), "");
  unsetenv("EVO_WORKERS_SEE_ALL");
  if (before) setenv("CUDA_VISIBLE_DEVICES", kept.c_str(), 1);
  else unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST(WorkerProtocol, JobsAnswersAndDevicesRoundTrip) {
  WorkerJob j;
  j.profile_path = "/p/x.json";
  j.config = {{"TILE", 16}, {"PLANT", 3}};
  j.candidate_cubin = "/c/a.cubin";
  j.candidate_name = "planted_gemm";
  j.problems = {"small"};
  j.seeds = {7, 9};
  j.trials = 3;
  j.fast = true;
  j.metrics_max_p50_us = 11.5;
  j.metrics_wait_max_p50_us = 10.5;
  j.reference_cache = "/cache/reference";
  j.metrics_lock = "/cache/locks/metrics.lock";
  j.metrics_batch.push_back(MetricsCandidate{{{"TILE", 32}}, "/c/b.cubin", "planted_gemm", {}});
  const WorkerJob k = job_from_json(job_to_json(j));
  ASSERT_EQ(k.metrics_batch.size(), 1u);
  EXPECT_EQ(k.metrics_batch[0].config, (Config{{"TILE", 32}}));
  EXPECT_EQ(k.metrics_batch[0].candidate_cubin, "/c/b.cubin");
  EXPECT_DOUBLE_EQ(k.metrics_max_p50_us, 11.5);
  EXPECT_DOUBLE_EQ(k.metrics_wait_max_p50_us, 10.5);
  EXPECT_EQ(k.reference_cache, j.reference_cache);
  EXPECT_EQ(k.metrics_lock, j.metrics_lock);
  EXPECT_TRUE(job_from_json(R"({"profile_path":"p","config":{},"candidate_cubin":"c","candidate_name":"n"})")
                  .metrics_lock.empty())
      << "a job from an older coordinator profiles without the lock";
  EXPECT_EQ(k.config, j.config);
  EXPECT_EQ(k.seeds, j.seeds);
  EXPECT_EQ(k.trials, 3);
  EXPECT_TRUE(k.fast);
  EXPECT_FALSE(k.metrics);
  EXPECT_TRUE(k.reference_cubin.empty());
  EXPECT_THROW(job_from_json("{\"config\": 3}"), UserError);

  WorkerAnswer a;
  a.outcome = Outcome::Crashed;
  a.message = "an illegal memory access was encountered during green: candidate launch";
  a.fast.p50_us = 12.5;
  GreenResult g;
  g.problem = "small";
  g.outcome = Outcome::Rejected;
  g.max_abs = 0.5;
  a.green.problems.push_back(g);
  a.references_made = 4;
  a.references_read = 38;
  a.warnings = {"trial store: /c/ab/ab12.out is damaged (checksum differs): removed, made again"};
  a.batch_metrics.resize(2);
  a.batch_metrics[1].outcome = Outcome::Passed;
  a.batch_metrics[1].values = {{"gpu__time_duration.sum", 1234.5}};
  const WorkerAnswer b = answer_from_json(answer_to_json(a));
  ASSERT_EQ(b.batch_metrics.size(), 2u);
  EXPECT_EQ(b.batch_metrics[1].values.at("gpu__time_duration.sum"), 1234.5);
  EXPECT_EQ(b.references_made, 4);
  EXPECT_EQ(b.references_read, 38);
  EXPECT_EQ(b.warnings, a.warnings);
  EXPECT_EQ(b.outcome, Outcome::Crashed);
  EXPECT_EQ(b.message, a.message);
  EXPECT_EQ(b.fast.p50_us, 12.5);
  ASSERT_EQ(b.green.problems.size(), 1u);
  EXPECT_EQ(b.green.problems[0].max_abs, 0.5);

  DeviceInfo d;
  d.present = true;
  d.name = "NVIDIA H100 80GB HBM3";
  d.l2_bytes = 52428800;
  const DeviceInfo e = device_from_json(device_to_json(d));
  EXPECT_TRUE(e.present);
  EXPECT_EQ(e.name, d.name);
  EXPECT_EQ(e.l2_bytes, d.l2_bytes);
}

TEST(WorkerProtocol, AWorkerThatCannotStartIsACrashNotAHang) {
  WorkerClient w("/nonexistent/evo", 0);
  WorkerJob j;
  j.profile_path = "x";
  const WorkerAnswer a = w.run(j, 5);
  EXPECT_EQ(a.outcome, Outcome::Crashed);
  EXPECT_NE(a.message.find("exited with status 127"), std::string::npos) << a.message;
  EXPECT_NE(a.message.find("(cannot run /nonexistent/evo: No such file or directory)"), std::string::npos) << a.message;
}

// A worker lost is not a kernel's verdict (issue 35): killed from outside mid-job, its candidate
// is measured again on a fresh worker; only a second death the same way is recorded as a crash,
// and a kernel's own fault (answered by the worker) is never retried.
struct LostWorker {
  fs::path dir = temp_dir("evo-lost-worker");
  std::vector<std::string> said;
  WorkerAnswer run(int deaths, const char* answer) {
    ::setenv("FAKE_WORKER_COUNT", (dir / "count").c_str(), 1);
    ::setenv("FAKE_WORKER_DEATHS", std::to_string(deaths).c_str(), 1);
    ::setenv("FAKE_WORKER_ANSWER", answer, 1);
    WorkerClient w(data("workers/dies_then_answers.py").string(), 3);
    WorkerJob j;
    j.profile_path = "x";
    return w.run_measured(j, 10, [&](const std::string& line) { said.push_back(line); });
  }
  int jobs() const {
    std::ifstream in(dir / "count");
    int n = 0;
    in >> n;
    return n;
  }
  ~LostWorker() { fs::remove_all(dir); }
};

TEST(WorkerProtocol, AWorkerKilledFromOutsideHasItsCandidateMeasuredAgain) {
  LostWorker t;
  const WorkerAnswer a = t.run(1, "passed");
  EXPECT_EQ(a.outcome, Outcome::Passed) << a.message;
  EXPECT_FALSE(a.worker_lost);
  EXPECT_EQ(t.jobs(), 2);
  ASSERT_EQ(t.said.size(), 1u);
  EXPECT_NE(t.said[0].find("GPU 3: worker killed by signal 9"), std::string::npos) << t.said[0];
  EXPECT_NE(t.said[0].find("during green: candidate launch (problem small, seed 0, trial 0)"), std::string::npos);
  EXPECT_NE(t.said[0].find("measured again on a fresh worker"), std::string::npos) << t.said[0];
}

TEST(WorkerProtocol, AWorkerThatDiesTwiceIsTheCandidatesCrash) {
  LostWorker t;
  const WorkerAnswer a = t.run(2, "passed");
  EXPECT_EQ(a.outcome, Outcome::Crashed);
  EXPECT_NE(a.message.find("(it died twice)"), std::string::npos) << a.message;
  EXPECT_EQ(t.jobs(), 2);
  ASSERT_EQ(t.said.size(), 2u);
  EXPECT_NE(t.said[1].find("recorded as the candidate's crash"), std::string::npos) << t.said[1];
}

TEST(WorkerProtocol, AKernelsOwnFaultIsNotRetried) {
  LostWorker t;
  const WorkerAnswer a = t.run(0, "crash");
  EXPECT_EQ(a.outcome, Outcome::Crashed);
  EXPECT_FALSE(a.worker_lost);
  EXPECT_EQ(t.jobs(), 1);
  EXPECT_TRUE(t.said.empty());
}

// A worker whose coordinator died while a kernel never returns ends itself once the announced
// step is past its budget; a hang-up while idle or within budget is nobody's business but the
// session's, and a live coordinator is left to its own watchdog.
TEST(WorkerProtocol, AWorkerWhoseRunIsGoneEndsWhenItsStepRunsPastItsBudget) {
  struct Watched {
    int fds[2];
    std::mutex m;
    std::vector<std::string> expired;
    std::unique_ptr<ClientWatch> watch;
    Watched() {
      EXPECT_EQ(::pipe(fds), 0);
      watch = std::make_unique<ClientWatch>(fds[0], [this](const std::string& step) {
        std::lock_guard<std::mutex> lock(m);
        expired.push_back(step);
      });
    }
    std::vector<std::string> seen() {
      std::lock_guard<std::mutex> lock(m);
      return expired;
    }
    ~Watched() {
      watch.reset();
      ::close(fds[0]);
      if (fds[1] >= 0) ::close(fds[1]);
    }
    void hang_up() { ::close(fds[1]), fds[1] = -1; }
  };
  const auto wait = [](int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); };
  {  // gone mid-step: the step's budget, then the end
    Watched w;
    w.watch->job_started(60);
    w.watch->step("green: candidate launch (problem small, seed 0, trial 0)", 0.3);
    w.hang_up();
    wait(100);
    EXPECT_TRUE(w.seen().empty()) << "within its budget the kernel may still return";
    wait(600);
    ASSERT_EQ(w.seen().size(), 1u);
    EXPECT_EQ(w.seen()[0], "green: candidate launch (problem small, seed 0, trial 0)");
  }
  {  // gone while idle, or the job ends within budget: nothing
    Watched w;
    w.watch->step("fast: timing (problem main)", 0.2);
    w.watch->job_ended();
    w.hang_up();
    wait(500);
    EXPECT_TRUE(w.seen().empty());
  }
  {  // the coordinator still there: its own watchdog decides, not this
    Watched w;
    w.watch->step("green: candidate launch (problem main, seed 1, trial 1)", 0.1);
    wait(500);
    EXPECT_TRUE(w.seen().empty());
  }
  {  // a session's end does not wait for the watch's next look
    Watched w;
    const auto t0 = std::chrono::steady_clock::now();
    w.watch.reset();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.05);
  }
  {  // a pool's worker: its run's socket closed
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    std::vector<std::string> expired;
    std::mutex m;
    {
      ClientWatch watch(sv[0], [&](const std::string& step) {
        std::lock_guard<std::mutex> lock(m);
        expired.push_back(step);
      });
      watch.step("metrics: profiling (problem mission)", 0.2);
      ::close(sv[1]);
      wait(700);
    }
    ::close(sv[0]);
    ASSERT_EQ(expired.size(), 1u);
    EXPECT_EQ(expired[0], "metrics: profiling (problem mission)");
  }
}

// ---- the pool of warm workers (engine/pool.h); no GPU needed: a worker without a device answers
// every job "no CUDA device is present", which says who answered ----

// An `evo worker --listen` in a pool folder of the test's own, as the supervisor starts it.
struct ListeningWorker {
  test::TempDir dir;
  std::string kept_pool_dir;
  pid_t pid = -1;
  fs::path socket;
  explicit ListeningWorker(const std::string& visible, double idle_exit_s = 60, WorkerRole role = WorkerRole::Measure) {
    kept_pool_dir = std::getenv("EVO_POOL_DIR") ? std::getenv("EVO_POOL_DIR") : "";
    ::setenv("EVO_POOL_DIR", dir.path.c_str(), 1);
    socket = pool_socket(visible, role);
    const std::string idle = std::to_string(idle_exit_s);
    pid = fork();
    if (pid == 0) {
      execl(evo_binary().c_str(), "evo", "worker", "--device", "0", "--listen", socket.c_str(), "--idle-exit", idle.c_str(),
            "--role", role_name(role), nullptr);
      _exit(127);
    }
    for (int i = 0; i < 500 && !fs::exists(socket); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ~ListeningWorker() {
    if (pid > 0) kill(pid, SIGKILL), waitpid(pid, nullptr, 0);
    ::setenv("EVO_POOL_DIR", kept_pool_dir.c_str(), 1);
  }
};

WorkerJob job_without_device() {
  WorkerJob j;
  j.profile_path = data("profiles/planted.json").string();
  return j;
}

TEST(PoolWorker, ARunAttachesToAFreeWorkerOfItsOwnBuildAndEnvironmentOnly) {
  if (device().present) GTEST_SKIP() << "needs a machine without a GPU (a worker then answers at once): " << device().name;
  ListeningWorker w("GPU-test");
  ASSERT_TRUE(fs::exists(w.socket)) << "the worker did not listen on " << w.socket;
  {
    WorkerClient a(evo_binary(), 0, "GPU-test");
    const WorkerAnswer first = a.run(job_without_device(), 30);
    EXPECT_EQ(first.outcome, Outcome::Skipped) << first.message;
    EXPECT_NE(first.message.find("no CUDA device is present"), std::string::npos) << first.message;
    EXPECT_TRUE(a.pooled());
    EXPECT_EQ(a.pid(), w.pid) << "answered by the pool's worker, not a child";

    // While it serves this run, another run is told so at once and starts its own worker.
    WorkerClient b(evo_binary(), 0, "GPU-test");
    const auto t0 = std::chrono::steady_clock::now();
    const WorkerAnswer other = b.run(job_without_device(), 30);
    EXPECT_NE(other.message.find("no CUDA device is present"), std::string::npos) << other.message;
    EXPECT_FALSE(b.pooled());
    EXPECT_NE(b.pid(), w.pid);
    EXPECT_NE(b.pool_note().find("serving another run"), std::string::npos) << b.pool_note();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20);

    // A second job of the same run goes to the same worker.
    a.run(job_without_device(), 30);
    EXPECT_EQ(a.pid(), w.pid);
  }
  // The run is over: the worker is still there for the next one.
  WorkerClient c(evo_binary(), 0, "GPU-test");
  c.run(job_without_device(), 30);
  EXPECT_TRUE(c.pooled()) << c.pool_note();
  EXPECT_EQ(c.pid(), w.pid);
  c.ask_to_quit();
  {
    // Another environment for the worker's behaviour, or another build: not attached, said why.
    ::setenv("EVO_METRICS_MAX_RANGES", "7", 1);
    WorkerClient d(evo_binary(), 0, "GPU-test");
    d.run(job_without_device(), 30);
    ::unsetenv("EVO_METRICS_MAX_RANGES");
    EXPECT_FALSE(d.pooled());
    EXPECT_NE(d.pool_note().find("its environment differs: unset in the pool, EVO_METRICS_MAX_RANGES=7 here"),
              std::string::npos)
        << d.pool_note();
  }
  {
    const fs::path other = w.dir.path / "other-evo";
    std::ofstream(other) << "#!/bin/sh\nexit 3\n";
    fs::permissions(other, fs::perms::owner_all);
    WorkerClient e(other.string(), 0, "GPU-test");
    e.run(job_without_device(), 30);
    EXPECT_FALSE(e.pooled());
    EXPECT_NE(e.pool_note().find("it runs another build of evo"), std::string::npos) << e.pool_note();
  }
}

// Something else listening where a pool's socket would be, saying a hello evo cannot read: the run
// does not attach, says why, and measures on a worker of its own.
// Each GPU of a pool has a measuring worker and a profiling worker, each on a socket of its own: a
// run's measuring client attaches only to the first, its profiling client only to the second.
TEST(PoolWorker, TheMeasuringAndTheProfilingWorkerOfAGpuServeTheirOwnRoleOnly) {
  if (device().present) GTEST_SKIP() << "needs a machine without a GPU (a worker then answers at once): " << device().name;
  ListeningWorker w("GPU-test", 60, WorkerRole::Profile);
  ASSERT_TRUE(fs::exists(w.socket)) << "the profiling worker did not listen on " << w.socket;
  EXPECT_NE(w.socket, pool_socket("GPU-test", WorkerRole::Measure));
  {
    WorkerClient measuring(evo_binary(), 0, "GPU-test");
    measuring.run(job_without_device(), 30);
    EXPECT_FALSE(measuring.pooled()) << "a measuring client attached to the profiling worker";
    EXPECT_NE(measuring.pid(), w.pid);
  }
  WorkerClient profiling(evo_binary(), 0, "GPU-test", WorkerRole::Profile);
  const WorkerAnswer a = profiling.run(job_without_device(), 30);
  EXPECT_NE(a.message.find("no CUDA device is present"), std::string::npos) << a.message;
  EXPECT_TRUE(profiling.pooled()) << profiling.pool_note();
  EXPECT_EQ(profiling.pid(), w.pid);
  const CliResult bad = run_evo("worker --device 0 --listen " + (w.dir.path / "x.sock").string() + " --role timing");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--role timing: give measure or profile"), std::string::npos) << bad.out << bad.err;
}

// A Unix socket listening at `path`, as a pool worker's would (-1 when it cannot be made): the
// tests below play the worker's side themselves.
int listening_socket(const fs::path& path) {
  const int ls = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (ls < 0 || ::bind(ls, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(ls, 4) != 0) {
    if (ls >= 0) ::close(ls);
    return -1;
  }
  return ls;
}

TEST(PoolWorker, AHelloThatIsNotEvosIsRefused) {
  test::TempDir dir;
  const std::string kept = std::getenv("EVO_POOL_DIR") ? std::getenv("EVO_POOL_DIR") : "";
  ::setenv("EVO_POOL_DIR", dir.path.c_str(), 1);
  const int ls = listening_socket(pool_socket("GPU-odd"));
  ASSERT_GE(ls, 0);
  std::thread server([&] {
    const int c = ::accept(ls, nullptr, nullptr);
    const std::string frame = encode_frame(R"({"type":"hello","pid":"not a pid","busy":false})");
    if (::write(c, frame.data(), frame.size()) < 0) return;
    ::close(c);
  });
  WorkerClient w(evo_binary(), 0, "GPU-odd");
  w.run(job_without_device(), 30);
  server.join();
  ::close(ls);
  ::setenv("EVO_POOL_DIR", kept.c_str(), 1);
  EXPECT_FALSE(w.pooled());
  EXPECT_NE(w.pool_note().find("its hello is not this evo's"), std::string::npos) << w.pool_note();
}

// A process about to profile on a GPU without the pool asks the pool's profiling worker there to
// end its kept profiler session (release_pool_profiler): only an idle one that says it holds one
// (its hello) is asked, and the answer says whether it let go. A profiling worker of a run's own
// asks before it starts (WorkerClient::start).
TEST(PoolWorker, AProcessProfilingWithoutThePoolAsksAnIdleWarmProfilerToLetGo) {
  test::TempDir dir;
  const std::string kept = std::getenv("EVO_POOL_DIR") ? std::getenv("EVO_POOL_DIR") : "";
  ::setenv("EVO_POOL_DIR", dir.path.c_str(), 1);
  const int ls = listening_socket(pool_socket("GPU-warm", WorkerRole::Profile));
  ASSERT_GE(ls, 0);
  // Four connections: warm and idle (asked), busy (not asked), idle without a session (not asked),
  // a hello evo cannot read (a field of another type: not asked, and no exception).
  std::vector<std::string> asked;
  std::thread server([&] {
    for (const std::string& hello : {std::string(R"({"type":"hello","pid":1,"busy":false,"profiler_warm":true})"),
                                     std::string(R"({"type":"hello","pid":1,"busy":true,"profiler_warm":true})"),
                                     std::string(R"({"type":"hello","pid":1,"busy":false,"profiler_warm":false})"),
                                     std::string(R"({"type":"hello","pid":1,"busy":"no","profiler_warm":true})")}) {
      const int c = ::accept(ls, nullptr, nullptr);
      if (c < 0) return;
      write_frame(c, hello);
      const std::optional<std::string> f = read_frame(c, 2);
      asked.push_back(f.value_or(""));
      if (f && f->find("release-profiler") != std::string::npos) write_frame(c, R"({"type":"released"})");
      ::close(c);
    }
  });
  EXPECT_TRUE(release_pool_profiler("GPU-warm"));
  EXPECT_FALSE(release_pool_profiler("GPU-warm")) << "serving a run: its session is that run's";
  EXPECT_FALSE(release_pool_profiler("GPU-warm")) << "no session to end";
  EXPECT_FALSE(release_pool_profiler("GPU-warm")) << "a hello it cannot read";
  EXPECT_FALSE(release_pool_profiler("GPU-none")) << "no pool worker for that GPU";
  server.join();
  ::close(ls);
  ::setenv("EVO_POOL_DIR", kept.c_str(), 1);
  ASSERT_EQ(asked.size(), 4u);
  EXPECT_NE(asked[0].find("release-profiler"), std::string::npos) << asked[0];
  EXPECT_EQ(asked[1], "") << "a busy worker is not asked";
  EXPECT_EQ(asked[2], "") << "nor one without a session";
  EXPECT_EQ(asked[3], "") << "nor one whose hello is not evo's";
}

// A real profiling worker of a pool, on a machine without a GPU (no session: nothing to let go),
// answers a release request and serves the next run as before.
TEST(PoolWorker, AReleaseRequestLeavesTheWorkerServingRuns) {
  if (device().present) GTEST_SKIP() << "needs a machine without a GPU (a worker then answers at once): " << device().name;
  ListeningWorker w("GPU-rel", 60, WorkerRole::Profile);
  EXPECT_FALSE(release_pool_profiler("GPU-rel")) << "it holds no session";
  WorkerClient a(evo_binary(), 0, "GPU-rel", WorkerRole::Profile);
  const WorkerAnswer r = a.run(job_without_device(), 30);
  EXPECT_TRUE(a.pooled()) << a.pool_note();
  EXPECT_FALSE(a.profiler_warm());
  EXPECT_NE(r.message.find("no CUDA device is present"), std::string::npos) << r.message;
}

TEST(PoolWorker, APoolWorkerThatDiesMidRunIsReplacedByTheRunsOwn) {
  if (device().present) GTEST_SKIP() << "needs a machine without a GPU (a worker then answers at once): " << device().name;
  ListeningWorker w("GPU-test");
  WorkerClient a(evo_binary(), 0, "GPU-test");
  a.run(job_without_device(), 30);
  ASSERT_TRUE(a.pooled());
  kill(w.pid, SIGKILL);
  waitpid(w.pid, nullptr, 0);
  w.pid = -1;
  std::vector<std::string> said;
  const WorkerAnswer after = a.run_measured(job_without_device(), 30, [&](const std::string& l) { said.push_back(l); });
  EXPECT_NE(after.message.find("no CUDA device is present"), std::string::npos) << after.message;
  EXPECT_FALSE(a.pooled()) << "the rest of the run on a worker of its own";
  EXPECT_GT(a.pid(), 0);
  for (const auto& l : said) EXPECT_EQ(l.find("recorded as the candidate's crash"), std::string::npos) << l;
}

// A pool worker's socket path appears only once it listens: bound in place, a run that found the
// path between bind() and listen() was refused and went without the pool (measured with a client
// that connects the moment the path exists, on this 2-core machine under load: 7 refused of 600
// worker starts bound in place, 0 of 600 bound under a name of its own and renamed).
TEST(PoolWorker, ASocketPathAppearsOnlyOnceItsWorkerListens) {
  test::TempDir dir;
  int refused = 0, bound_elsewhere = 0;
  const int starts = 20;
  for (int i = 0; i < starts; ++i) {
    const fs::path socket = dir.path / ("gpu-r" + std::to_string(i) + ".sock");
    const pid_t pid = fork();
    if (pid == 0) {
      execl(evo_binary().c_str(), "evo", "worker", "--device", "0", "--listen", socket.c_str(), "--idle-exit", "30", nullptr);
      _exit(127);
    }
    const auto t0 = std::chrono::steady_clock::now();
    while (!fs::exists(socket) && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    }  // no sleep: the client looks as often as it can, as a run starting beside a new worker may
    const int c = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof addr.sun_path - 1);
    if (::connect(c, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      ++refused;
    } else {
      // The name the worker bound, as its peer sees it: not the path runs look for.
      sockaddr_un peer{};
      socklen_t len = sizeof peer;
      if (::getpeername(c, reinterpret_cast<sockaddr*>(&peer), &len) == 0 && socket.string() != peer.sun_path) ++bound_elsewhere;
    }
    ::close(c);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  EXPECT_EQ(refused, 0) << "connections refused the moment the path appeared, of " << starts;
  EXPECT_EQ(bound_elsewhere, starts - refused) << "each worker bound under a name of its own and renamed it when listening";
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(dir.path))
    if (e.path().extension() != ".sock") left.push_back(e.path().filename().string());
  EXPECT_TRUE(left.empty()) << "a temporary name left behind: " << left.front();
}

TEST(PoolWorker, AnIdleWorkerEndsByItselfAndTakesItsSocket) {
  ListeningWorker w("GPU-idle", 0.5);
  ASSERT_TRUE(fs::exists(w.socket));
  int status = -1;
  const auto t0 = std::chrono::steady_clock::now();
  while (waitpid(w.pid, &status, WNOHANG) == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(30))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  w.pid = -1;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "an idle end is not a death: the supervisor lets it go";
  EXPECT_FALSE(fs::exists(w.socket));
  WorkerClient a(evo_binary(), 0, "GPU-idle");
  a.run(job_without_device(), 30);
  EXPECT_FALSE(a.pooled());
  EXPECT_TRUE(a.pool_note().empty()) << "no pool there is not a refusal: " << a.pool_note();
}

// A supervisor killed with SIGKILL leaves its workers serving runs, never replaced after a fault:
// `evo pool status` says so, `evo pool start` refuses to start a second pool beside them, and
// `evo pool stop` ends them from the pids the supervisor recorded (checked to be those workers).
TEST(PoolCli, AKilledSupervisorsWorkersAreFoundAndEnded) {
  ListeningWorker w("GPU-orphan");
  ASSERT_TRUE(fs::exists(w.socket));
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);  // a supervisor that is gone
  nlohmann::json record{{"supervisor", dead},
                        {"binary", evo_binary()},
                        {"devices", {{{"gpu", 0}, {"visible", "GPU-orphan"}, {"socket", w.socket.string()}, {"worker", w.pid}}}}};
  std::ofstream(w.dir.path / "pool.json") << record.dump(2);
  const CliResult status = run_evo("pool status");
  EXPECT_EQ(status.code, 1) << status.out << status.err;
  EXPECT_NE(status.out.find("its workers " + std::to_string(w.pid) + " still serve runs"), std::string::npos) << status.out;
  const CliResult start = run_evo_env("CUDA_VISIBLE_DEVICES=GPU-orphan", "pool start --devices 0");
  EXPECT_EQ(start.code, 2) << start.out << start.err;
  EXPECT_NE(start.err.find("the workers of a pool whose supervisor was killed still run"), std::string::npos) << start.err;
  EXPECT_EQ(kill(w.pid, 0), 0) << "a refused start ends nothing";
  const CliResult stop = run_evo("pool stop");
  EXPECT_EQ(stop.code, 0) << stop.err;
  EXPECT_NE(stop.out.find("(1 process ended)"), std::string::npos) << stop.out;
  int st = 0;
  EXPECT_EQ(waitpid(w.pid, &st, 0), w.pid);
  w.pid = -1;
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  EXPECT_FALSE(fs::exists(w.dir.path / "pool.json"));
  EXPECT_FALSE(fs::exists(w.socket));
  // A pid in the record that is not that pool's worker (reused by another process) is left alone.
  record["devices"][0]["worker"] = static_cast<int>(::getpid());
  std::ofstream(w.dir.path / "pool.json") << record.dump(2);
  const CliResult again = run_evo("pool stop");
  EXPECT_NE(again.out.find("no pool was running"), std::string::npos) << again.out;
}

TEST(PoolCli, StartingWhereAGpuDoesNotAnswerLeavesNothingRunning) {
  if (device().present) GTEST_SKIP() << "needs a machine without a GPU: " << device().name;
  test::TempDir dir;
  const std::string env = "EVO_POOL_DIR='" + dir.path.string() + "' ";
  CliResult r = run_evo_env(env + "CUDA_VISIBLE_DEVICES=0", "pool start --devices 0 --idle-exit 30");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("evo: GPU 0: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("(no pool started)"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(fs::exists(dir.path / "pool.json"));
  EXPECT_FALSE(fs::exists(dir.path / "gpu-0.sock"));
  const CliResult status = run_evo_env(env, "pool status");
  EXPECT_EQ(status.code, 1) << status.out << status.err;
  EXPECT_NE(status.out.find("no pool is running"), std::string::npos) << status.out;
  const CliResult stop = run_evo_env(env, "pool stop");
  EXPECT_EQ(stop.code, 0) << stop.out << stop.err;
  EXPECT_NE(stop.out.find("no pool was running"), std::string::npos) << stop.out;
  const CliResult release = run_evo_env(env, "pool release");
  EXPECT_EQ(release.code, 0) << release.out << release.err;
  EXPECT_NE(release.out.find("nothing holds a profiler session"), std::string::npos) << release.out;
  // A GPU the host does not list: said before anything starts.
  r = run_evo_env(env + "CUDA_VISIBLE_DEVICES=0", "pool start --devices 3");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "evo: GPU 3: not among this host's GPUs (CUDA_VISIBLE_DEVICES or the driver's listing), so no worker "
                   "can be given it alone\n");
  r = run_evo_env(env, "pool start --devices 0 --idle-exit -1");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--idle-exit"), std::string::npos) << r.err;
  // The supervisor that had started is gone too.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(fs::exists(dir.path / "pool.json"));
}

TEST(FastStats, SummarizesSamples) {
  const Timing t = summarize_samples({10, 12, 11, 13, 14, 10, 30});
  EXPECT_EQ(t.outcome, Outcome::Passed);
  EXPECT_EQ(t.iters, 7);
  EXPECT_DOUBLE_EQ(t.p50_us, 12);
  EXPECT_DOUBLE_EQ(t.min_us, 10);
  EXPECT_NEAR(t.mean_us, 100.0 / 7, 1e-12);
  EXPECT_NEAR(t.p90_us, 14 + 0.4 * 16, 1e-12);  // 0.9 * 6 = 5.4: 40% from the 6th to the 7th order statistic
  double ss = 0;
  for (double x : {10, 12, 11, 13, 14, 10, 30}) ss += (x - 100.0 / 7) * (x - 100.0 / 7);
  EXPECT_NEAR(t.std_us, std::sqrt(ss / 6), 1e-12);
  EXPECT_NEAR(t.cv, t.std_us / t.mean_us, 1e-12);
  EXPECT_EQ(summarize_samples({}).outcome, Outcome::Skipped);
}

TEST(Sanitize, ParsesMemcheckErrorsAndTheirFirstMessage) {
  const std::string log =
      "========= COMPUTE-SANITIZER\n"
      "========= Invalid __global__ read of size 4 bytes\n"
      "=========     at planted_gemm+0x3f0\n"
      "=========     by thread (0,0,0) in block (0,0,0)\n"
      "=========     Address 0x7f3a40004000 is out of bounds\n"
      "=========     and is 1 bytes after the nearest allocation at 0x7f3a40000000 of size 16384 bytes\n"
      "=========     Saved host backtrace up to driver entry point at kernel launch time\n"
      "=========         Host Frame: [0x2f2a1f] in libcuda.so.1\n"
      "=========\n"
      "========= ERROR SUMMARY: 1 error\n";
  const SanitizeVerdict v = parse_memcheck_log(log);
  EXPECT_EQ(v.outcome, Outcome::Rejected);
  EXPECT_EQ(v.errors, 1);
  EXPECT_EQ(v.first_message.rfind("Invalid __global__ read of size 4 bytes; at planted_gemm+0x3f0", 0), 0u)
      << v.first_message;
  EXPECT_EQ(v.first_message.find("Host Frame"), std::string::npos) << v.first_message;

  const SanitizeVerdict clean = parse_memcheck_log("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n");
  EXPECT_EQ(clean.outcome, Outcome::Passed);
  EXPECT_EQ(clean.errors, 0);
  EXPECT_EQ(parse_memcheck_log("segfault").outcome, Outcome::Skipped);
}

TEST(Planted, ProfileLoadsAndEveryPlantCompiles) {
  const Profile p = load_profile(data("profiles/planted.json"));
  EXPECT_EQ(p.gates.timeout_s, 2);
  EXPECT_EQ(p.objective, "main");
  ASSERT_NE(p.find_knob("PLANT"), nullptr);
  EXPECT_EQ(p.find_knob("PLANT")->values.size(), 6u);
  CompileCache cache(test_cache());
  for (int n = 0; n <= 5; ++n) {
    const Build b = compile(candidate_request(p, {{"TILE", 16}, {"PLANT", n}}), cache);
    EXPECT_TRUE(b.ok) << "PLANT=" << n << ": " << b.log;
    EXPECT_GT(b.ptxas.registers, 0) << "PLANT=" << n;
  }
  EXPECT_TRUE(compile(reference_request(p), cache).ok);
}

}  // namespace
}  // namespace evo
