// The NVRTC compiler, its content-addressed cache, the ptxas report and the compile-worker pool.
// Needs the CUDA toolkit (NVRTC), not a GPU: every compile here runs on the build machine.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "engine/compiler.h"
#include "engine/error.h"
#include "engine/evaluation_json.h"  // defines: to_json/from_json of PtxasReport
#include "engine/hash.h"
#include "engine/launch.h"
#include "engine/profile.h"
#include "engine/space.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = evo::test::source_root();

using test::TempDir;

void write_text(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary | std::ios::trunc) << text;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A small template with one knob, a quoted #include beside it and one from an include folder.
struct TinyTemplate {
  explicit TinyTemplate(const fs::path& dir) : dir(dir) {
    write_text(dir / "src" / "tiny.cu",
               "#include \"tiny_helper.cuh\"\n"
               "#include <extra.cuh>\n"
               "#ifndef SCALE\n#define SCALE 2\n#endif\n"
               "extern \"C\" __global__ void tiny(float* y, const float* x, int n) {\n"
               "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
               "  if (i < n) y[i] = twice(x[i]) * SCALE + EXTRA;\n"
               "}\n");
    write_text(dir / "src" / "tiny_helper.cuh", "__device__ inline float twice(float v) { return 2.0f * v; }\n");
    write_text(dir / "inc" / "extra.cuh", "#define EXTRA 1.0f\n");
  }
  CompileRequest request() const {
    CompileRequest r;
    r.source_path = (dir / "src" / "tiny.cu").string();
    r.name_expression = "tiny";
    r.defines = {{"SCALE", "3"}};
    r.include_dirs = {(dir / "inc").string()};
    r.arch = "sm_90";
    return r;
  }
  fs::path dir;
};

// Cache entries (json files) under a cache folder.
std::size_t cache_entries(const fs::path& cache) {
  std::size_t n = 0;
  if (!fs::exists(cache)) return 0;
  for (const auto& e : fs::recursive_directory_iterator(cache))
    if (e.path().extension() == ".json") ++n;
  return n;
}

// The direct children of this process (the pool's compile workers).
std::vector<pid_t> child_pids() {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close = text.rfind(')');  // "pid (comm) state ppid ..."; comm may hold spaces
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == ::getpid())
      out.push_back(std::stoi(name));
  }
  return out;
}

// ---- cache key ------------------------------------------------------------------------------------

TEST(CompileCache, KeyIsStableAcrossCallsCachesAndCheckouts) {
  TempDir t;
  TinyTemplate tiny(t.path / "a");
  CompileCache c1(t.path / "cache1"), c2(t.path / "cache2");
  const auto r = tiny.request();
  const std::string k = c1.key(r);
  EXPECT_EQ(k.size(), 64u);
  EXPECT_EQ(k, c1.key(r));
  EXPECT_EQ(k, c2.key(r));  // the key does not depend on where the cache is

  // The same files in another folder (another checkout) give the same key: text, not paths.
  TinyTemplate other(t.path / "b");
  EXPECT_NE(other.request().source_path, r.source_path);
  EXPECT_EQ(c1.key(other.request()), k);
}

TEST(CompileCache, KeyChangesWithEveryInput) {
  TempDir t;
  TinyTemplate tiny(t.path);
  CompileCache cache(t.path / "cache");
  const auto base = tiny.request();
  const std::string k0 = cache.key(base);
  std::set<std::string> keys{k0};
  auto expect_new = [&](const CompileRequest& r, const char* what) {
    const std::string k = cache.key(r);
    EXPECT_NE(k, k0) << what;
    EXPECT_TRUE(keys.insert(k).second) << what << " collides with another variation";
  };
  {
    auto r = base;
    r.arch = "sm_89";
    expect_new(r, "arch");
  }
  {
    auto r = base;
    r.name_expression = "tiny2";
    expect_new(r, "entry name");
  }
  {
    auto r = base;
    r.defines["SCALE"] = "4";
    expect_new(r, "define value");
  }
  {
    auto r = base;
    r.defines["OTHER"] = "1";
    expect_new(r, "added define");
  }
  {
    auto r = base;
    r.options = {"--use_fast_math"};
    expect_new(r, "option");
  }
  // Files: change, measure, restore (the restored text gives the original key back).
  auto with_edit = [&](const fs::path& file, const char* what) {
    const std::string before = read_bytes(file);
    write_text(file, before + "// edited\n");
    expect_new(base, what);
    write_text(file, before);
    EXPECT_EQ(cache.key(base), k0) << what << " restored";
  };
  with_edit(t.path / "src" / "tiny.cu", "template text");
  with_edit(t.path / "src" / "tiny_helper.cuh", "quoted #include beside the template");
  with_edit(t.path / "inc" / "extra.cuh", "#include <...> found in include_dirs");
}

// Include lines as the preprocessor reads them (blanks around '#' and before the name), a header
// edited between two keys of one process to the same size, and a header first included by an
// edit all count: the key's per-file digests are kept only while a file's stat stays the same.
TEST(CompileCache, KeyFollowsIncludesWrittenAnyWayAndEditsWithinAProcess) {
  TempDir t;
  TinyTemplate tiny(t.path);
  write_text(t.path / "inc" / "spaced.cuh", "#define SPACED 1\n");
  write_text(t.path / "inc" / "later.cuh", "#define LATER 1\n");
  const fs::path src = t.path / "src" / "tiny.cu";
  const std::string text = read_bytes(src);
  write_text(src, "  #  include\t<spaced.cuh>\n" + text);
  CompileCache cache(t.path / "cache");
  const auto r = tiny.request();
  const std::string k0 = cache.key(r);
  EXPECT_EQ(cache.key(r), k0);
  write_text(t.path / "inc" / "spaced.cuh", "#define SPACED 2\n");  // same size, new text
  const std::string k1 = cache.key(r);
  EXPECT_NE(k1, k0) << "an include written with blanks, edited to the same size";
  // Not an include: text after the name, a comment, a '#' that is not the line's first.
  write_text(src, "  #  include\t<spaced.cuh>\n// #include <later.cuh>\nint x; #include <later.cuh>\n" + text);
  const std::string k2 = cache.key(r);
  write_text(t.path / "inc" / "later.cuh", "#define LATER 2\n");
  EXPECT_EQ(cache.key(r), k2) << "later.cuh is named on no include line";
  write_text(src, "  #  include\t<spaced.cuh>\n#include \"../inc/later.cuh\"\n" + text);
  const std::string k3 = cache.key(r);
  write_text(t.path / "inc" / "later.cuh", "#define LATER 3\n");
  EXPECT_NE(cache.key(r), k3) << "a header first included by an edit of the template";
}

TEST(CompileCache, KeyOfUnreadableTemplateIsAUserError) {
  TempDir t;
  CompileCache cache(t.path / "cache");
  CompileRequest r;
  r.source_path = (t.path / "missing.cu").string();
  r.name_expression = "k";
  r.arch = "sm_90";
  try {
    cache.key(r);
    FAIL() << "no error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("missing.cu: cannot read the template"), std::string::npos) << e.what();
  }
}

// ---- compile and cache ------------------------------------------------------------------------------

// evo's own kernels, kept on disk once built (set_builtin_cache): what a file holds is used when
// its checksum holds, so a planted valid file is what comes back; a damaged one is built again
// and rewritten; without a folder nothing is kept.
TEST(BuiltinCache, AKeptCubinIsReadBackAndADamagedOneBuiltAgain) {
  test::TempDir dir;
  const std::string src = "extern \"C\" __global__ void evo_probe(int* x) { *x = 7; }\n";
  set_builtin_cache(dir.path);
  const std::vector<char> built = builtin_cubin(src, "probe.cu", "sm_90", "a test kernel");
  ASSERT_FALSE(built.empty());
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir.path)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].extension(), ".cubin");
  EXPECT_EQ(builtin_cubin(src, "probe.cu", "sm_90", "a test kernel"), built);
  // A file whose checksum holds is trusted as it is: proof that it is read, not rebuilt.
  const std::string planted = "not a cubin, but whole";
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << planted << xxh64_hex(planted);
  EXPECT_EQ(builtin_cubin(src, "probe.cu", "sm_90", "a test kernel"), std::vector<char>(planted.begin(), planted.end()));
  // One byte changed: built again, and the file holds the build again.
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << "Not a cubin, but whole" << xxh64_hex(planted);
  EXPECT_EQ(builtin_cubin(src, "probe.cu", "sm_90", "a test kernel"), built);
  EXPECT_EQ(builtin_cubin(src, "probe.cu", "sm_90", "a test kernel"), built);
  // Another arch is another file.
  EXPECT_FALSE(builtin_cubin(src, "probe.cu", "sm_80", "a test kernel").empty());
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir.path)) ++n;
  EXPECT_EQ(n, 2u);
  set_builtin_cache({});
  for (const auto& e : fs::directory_iterator(dir.path)) fs::remove(e.path());
  EXPECT_EQ(builtin_cubin(src, "probe.cu", "sm_90", "a test kernel"), built);
  EXPECT_TRUE(fs::is_empty(dir.path)) << "kept without a folder set";
}

TEST(Compiler, SecondCompileIsACacheHitWithTheSameBuild) {
  TempDir t;
  TinyTemplate tiny(t.path);
  CompileCache cache(t.path / "cache");
  const Build first = compile(tiny.request(), cache);
  ASSERT_TRUE(first.ok) << first.log;
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(first.lowered_name, "tiny");
  EXPECT_GT(first.compile_ms, 0);
  EXPECT_GT(first.ptxas.registers, 0);
  ASSERT_TRUE(fs::is_regular_file(first.cubin_path));
  EXPECT_EQ(read_bytes(first.cubin_path).substr(0, 4), std::string("\x7f" "ELF"));
  EXPECT_EQ(cache_entries(cache.dir()), 1u);

  const Build again = compile(tiny.request(), cache);
  EXPECT_TRUE(again.ok);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.key, first.key);
  EXPECT_EQ(again.cubin_path, first.cubin_path);
  EXPECT_EQ(again.compile_ms, first.compile_ms);  // the real compile's time, kept
  EXPECT_EQ(again.ptxas.registers, first.ptxas.registers);
  EXPECT_EQ(cache_entries(cache.dir()), 1u);

  auto looked = cache.lookup(first.key);
  ASSERT_TRUE(looked.has_value());
  EXPECT_TRUE(looked->from_cache);
  EXPECT_FALSE(cache.lookup(std::string(64, '0')).has_value());
}

TEST(Compiler, EditedIncludeIsCompiledAgain) {
  TempDir t;
  TinyTemplate tiny(t.path);
  CompileCache cache(t.path / "cache");
  const Build first = compile(tiny.request(), cache);
  ASSERT_TRUE(first.ok) << first.log;
  write_text(t.path / "src" / "tiny_helper.cuh", "__device__ inline float twice(float v) { return v + v; }\n");
  const Build second = compile(tiny.request(), cache);
  ASSERT_TRUE(second.ok) << second.log;
  EXPECT_FALSE(second.from_cache);
  EXPECT_NE(second.key, first.key);
  EXPECT_EQ(cache_entries(cache.dir()), 2u);
}

TEST(Compiler, FailedBuildIsCachedWithItsLog) {
  TempDir t;
  write_text(t.path / "bad.cu",
             "#ifndef TILE\n#define TILE 48\n#endif\n"
             "static_assert(TILE % 32 == 0, \"TILE must be a multiple of 32\");\n"
             "extern \"C\" __global__ void bad(float* y) { y[threadIdx.x] = TILE; }\n");
  CompileCache cache(t.path / "cache");
  CompileRequest r;
  r.source_path = (t.path / "bad.cu").string();
  r.name_expression = "bad";
  r.arch = "sm_90";
  const Build first = compile(r, cache);
  EXPECT_FALSE(first.ok);
  EXPECT_FALSE(first.from_cache);
  EXPECT_NE(first.log.find("TILE must be a multiple of 32"), std::string::npos) << first.log;
  EXPECT_TRUE(first.cubin_path.empty());
  EXPECT_EQ(cache_entries(cache.dir()), 1u);

  const Build again = compile(r, cache);
  EXPECT_FALSE(again.ok);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.log, first.log);

  r.defines["TILE"] = "64";  // the knob value that satisfies the assertion compiles
  const Build fixed = compile(r, cache);
  EXPECT_TRUE(fixed.ok) << fixed.log;
}

TEST(Compiler, EntryPointMissingFromTheProgramIsAFailedBuild) {
  TempDir t;
  TinyTemplate tiny(t.path);
  CompileCache cache(t.path / "cache");
  auto r = tiny.request();
  r.name_expression = "no_such_kernel";
  const Build b = compile(r, cache);
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.log.find("no_such_kernel"), std::string::npos) << b.log;
}

// Kernel Tuner's expdist example includes cub/cub.cuh, which NVRTC refuses (cub's device-wide
// algorithms have host halves); examples/kernel_tuner/include/cub/cub.cuh, first on expdist.json's
// include path, brings in the block reduction alone. If CUDA's cub ever compiles under NVRTC whole,
// the first half of this test says so and the stand-in can go.
TEST(Compiler, CubIncludeCompilesThroughTheExamplesStandIn) {
  TempDir t;
  write_text(t.path / "block_sum.cu",
             "#include <cub/cub.cuh>\n"
             "extern \"C\" __global__ void block_sum(double* x) {\n"
             "  typedef cub::BlockReduce<double, 128> Reduce;\n"
             "  __shared__ Reduce::TempStorage temp;\n"
             "  const double s = Reduce(temp).Sum(x[threadIdx.x]);\n"
             "  if (threadIdx.x == 0) x[0] = s;\n"
             "}\n");
  CompileCache cache(t.path / "cache");
  CompileRequest r;
  r.source_path = (t.path / "block_sum.cu").string();
  r.name_expression = "block_sum";
  r.arch = "sm_90";
  const Build whole = compile(r, cache);
  EXPECT_FALSE(whole.ok) << "cub/cub.cuh compiles under NVRTC as it is: examples/kernel_tuner/include/ is no longer needed";
  EXPECT_NE(whole.log.find("not allowed in JIT mode"), std::string::npos) << whole.log;

  r.include_dirs = {(kSource / "examples" / "kernel_tuner" / "include").string()};
  const Build stand_in = compile(r, cache);
  EXPECT_TRUE(stand_in.ok) << stand_in.log;
}

TEST(Compiler, VirtualArchGivesPtx) {
  TempDir t;
  TinyTemplate tiny(t.path);
  CompileCache cache(t.path / "cache");
  auto r = tiny.request();
  r.arch = "compute_90";
  const Build b = compile(r, cache);
  ASSERT_TRUE(b.ok) << b.log;
  EXPECT_EQ(fs::path(b.cubin_path).extension(), ".ptx");
  EXPECT_NE(read_bytes(b.cubin_path).find(".entry tiny"), std::string::npos);
}

// MMA_PATH=3's epilogue transposes O within each quad and stores 16 bytes a thread. At an item's end the 4-byte stores
// it had took 3 400 clocks and held up the next item's Q (docs/results/sdpa-fa3.md, eighth pass). In the PTX every
// global store of the fp16 D=128 kernel is a v4 (D / 8 of them a thread: two rows of 128 columns), where the
// FlashAttention-2 path (MMA_PATH=2) keeps a word a store.
std::size_t count_of(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}
TEST(Compiler, Fa3EpilogueStoresSixteenBytesAThread) {
  TempDir t;
  CompileCache cache(t.path / "cache");
  const Profile d128 = load_profile(kSource / "profiles/sdpa_fp16_wgmma_d128.json");
  Config fa3 = d128.baseline;
  for (const auto& [k, v] : Config{{"MMA_PATH", 3}, {"TILE_M", 128}, {"TILE_N", 128}, {"NUM_WARPS", 8}, {"USE_TMA", 1},
                                   {"WG_PIPE", 1}, {"PINGPONG", 1}, {"PERSIST", 1}})
    fa3[k] = v;
  const Build b3 = compile(candidate_request(d128, fa3, "compute_90a"), cache);
  ASSERT_TRUE(b3.ok) << b3.log;
  const std::string ptx3 = read_bytes(b3.cubin_path);
  EXPECT_EQ(count_of(ptx3, "st.v4.u32") + count_of(ptx3, "st.global.v4.u32"), 8u);
  EXPECT_EQ(count_of(ptx3, "st.u32") + count_of(ptx3, "st.global.u32"), 0u);

  Config fa2 = d128.baseline;
  fa2["MMA_PATH"] = 2;
  const Build b2 = compile(candidate_request(d128, fa2, "compute_90a"), cache);
  ASSERT_TRUE(b2.ok) << b2.log;
  const std::string ptx2 = read_bytes(b2.cubin_path);
  EXPECT_GT(count_of(ptx2, "st.u32") + count_of(ptx2, "st.global.u32"), 0u);
  EXPECT_EQ(count_of(ptx2, "st.v4.u32") + count_of(ptx2, "st.global.v4.u32"), 0u);
}

// ---- ptxas report -------------------------------------------------------------------------------------

// Recorded from NVRTC 13.0 (-arch=sm_90 -Xptxas=-v -maxrregcount=32) on the two kernels of
// kPtxasSource below: a helper function's block sits between the entries.
const char* kRecordedPtxasLog =
    "ptxas info    : Overriding maximum register limit 256 for 'calls' with  32 of maxrregcount option\n"
    "ptxas info    : Overriding maximum register limit 256 for 'spill' with  32 of maxrregcount option\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'calls' for 'sm_90'\n"
    "ptxas info    : Function properties for calls\n"
    "ptxas         .     256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 1 barriers, 256 bytes cumulative stack size, 1024 bytes smem\n"
    "ptxas info    : Compile time = 16.720 ms\n"
    "ptxas info    : Function properties for _Z6helperPfi\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Compiling entry function 'spill' for 'sm_90'\n"
    "ptxas info    : Function properties for spill\n"
    "ptxas         .     800 bytes stack frame, 2328 bytes spill stores, 2352 bytes spill loads\n"
    "ptxas info    : Used 32 registers, used 0 barriers, 800 bytes cumulative stack size\n"
    "ptxas info    : Compile time = 149.268 ms\n";

const char* kPtxasSource = R"(
__device__ __noinline__ float helper(float* a, int n) {
  float loc[64];
  for (int i = 0; i < 64; ++i) loc[i] = a[i * n];
  return loc[n & 63];
}
extern "C" __global__ void spill(float* out, const float* in, int n) {
  float acc[96];
#pragma unroll
  for (int i = 0; i < 96; ++i) acc[i] = in[threadIdx.x + i * n];
#pragma unroll
  for (int k = 0; k < 8; ++k)
#pragma unroll
    for (int i = 0; i < 96; ++i) acc[i] = acc[i] * acc[(i + k) % 96] + 1.0f;
  float s = 0;
#pragma unroll
  for (int i = 0; i < 96; ++i) s += acc[i];
  out[threadIdx.x] = s;
}
extern "C" __global__ void calls(float* out, int n) {
  __shared__ float sh[256];
  sh[threadIdx.x] = n;
  __syncthreads();
  out[threadIdx.x] = helper(sh, n);
}
)";

TEST(Ptxas, RecordedLogGivesEachEntryItsOwnFigures) {
  const auto spill = parse_ptxas(kRecordedPtxasLog, "spill");
  EXPECT_EQ(spill.registers, 32);
  EXPECT_EQ(spill.spill_stores, 2328);
  EXPECT_EQ(spill.spill_loads, 2352);
  EXPECT_EQ(spill.stack_bytes, 800);
  EXPECT_EQ(spill.barriers, 0);
  EXPECT_EQ(spill.static_smem, 0);

  const auto calls = parse_ptxas(kRecordedPtxasLog, "calls");
  EXPECT_EQ(calls.registers, 32);
  EXPECT_EQ(calls.spill_stores, 0);
  EXPECT_EQ(calls.spill_loads, 0);
  EXPECT_EQ(calls.stack_bytes, 256);
  EXPECT_EQ(calls.barriers, 1);
  EXPECT_EQ(calls.static_smem, 1024);

  EXPECT_EQ(parse_ptxas(kRecordedPtxasLog, "missing").registers, -1);
  EXPECT_EQ(parse_ptxas("", "spill").registers, -1);
}

TEST(Ptxas, LiveNvrtcLogReportsSpillsOfTheSpillingEntryOnly) {
  TempDir t;
  write_text(t.path / "ptxas.cu", kPtxasSource);
  CompileCache cache(t.path / "cache");
  CompileRequest r;
  r.source_path = (t.path / "ptxas.cu").string();
  r.arch = "sm_90";
  r.options = {"-maxrregcount=32"};
  r.name_expression = "spill";
  const Build spill = compile(r, cache);
  ASSERT_TRUE(spill.ok) << spill.log;
  EXPECT_NE(spill.log.find("Compiling entry function 'spill'"), std::string::npos) << spill.log;
  EXPECT_GT(spill.ptxas.registers, 0);
  EXPECT_LE(spill.ptxas.registers, 32);
  EXPECT_GT(spill.ptxas.spill_stores, 0);
  EXPECT_GT(spill.ptxas.spill_loads, 0);
  EXPECT_GT(spill.ptxas.stack_bytes, 0);

  r.name_expression = "calls";
  const Build calls = compile(r, cache);
  ASSERT_TRUE(calls.ok) << calls.log;
  EXPECT_GT(calls.ptxas.registers, 0) << calls.log;
  EXPECT_EQ(calls.ptxas.spill_stores + calls.ptxas.spill_loads, 0);
  EXPECT_EQ(calls.ptxas.barriers, 1);
  EXPECT_EQ(calls.ptxas.static_smem, 1024);
}

// ---- the compile-worker pool --------------------------------------------------------------------------

// ---- wgmma serialised: ptxas's "Potential Performance Loss" lines --------------------------------------

// As NVRTC 13.0 prints them for sm_90a (-Xptxas=-v), before the entry's "Compiling entry function"
// line; the C7519 line is another warning (an injected warpgroup.arrive), not a serialisation.
const char* kWgmmaPtxasLog =
    "ptxas info    : (C7519) warpgroup.arrive is injected in around line 412 by compiler to allow use of "
    "registers in GMMA in function 'sdpa_fwd'\n"
    "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non "
    "wgmma instructions defining input registers of a wgmma between start and end of the pipeline stage in the "
    "function 'sdpa_fwd'\n"
    "ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
    "insufficient register resources for the wgmma pipeline in the function 'sdpa_fwd'\n"
    "ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async instructions are serialized due to non "
    "wgmma instructions defining input registers of a wgmma between start and end of the pipeline stage in the "
    "function 'sdpa_fwd'\n"
    "ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the "
    "presence of Extern calls in the function 'sdpa_split'\n"
    "ptxas info    : 0 bytes gmem\n"
    "ptxas info    : Compiling entry function 'sdpa_split' for 'sm_90a'\n"
    "ptxas info    : Function properties for sdpa_split\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 90 registers, used 1 barriers, 16 bytes smem\n"
    "ptxas info    : Compiling entry function 'sdpa_fwd' for 'sm_90a'\n"
    "ptxas info    : Function properties for sdpa_fwd\n"
    "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
    "ptxas info    : Used 168 registers, used 1 barriers, 128 bytes smem\n";

const std::string kC7513 =
    "C7513: non wgmma instructions defining input registers of a wgmma between start and end of the pipeline stage";
const std::string kC7511 = "C7511: insufficient register resources for the wgmma pipeline";

TEST(Ptxas, WgmmaSerialisationCountsForTheEntryItNamesOnly) {
  const PtxasReport fwd = parse_ptxas(kWgmmaPtxasLog, "sdpa_fwd");
  EXPECT_EQ(fwd.wgmma_serialized, (std::vector<std::string>{kC7513, kC7511}));  // two codes, each once; not C7519
  EXPECT_EQ(wgmma_serialized_codes(fwd), "C7513, C7511");
  EXPECT_EQ(fwd.registers, 168);  // the figures as before
  EXPECT_EQ(fwd.static_smem, 128);

  const PtxasReport split = parse_ptxas(kWgmmaPtxasLog, "sdpa_split");  // one code, its own only
  EXPECT_EQ(split.wgmma_serialized, std::vector<std::string>{"C7510: the presence of Extern calls"});
  EXPECT_EQ(wgmma_serialized_codes(split), "C7510");
  EXPECT_EQ(split.registers, 90);

  EXPECT_TRUE(parse_ptxas(kWgmmaPtxasLog, "sdpa_bwd").wgmma_serialized.empty());  // named by no line
}

TEST(Ptxas, WgmmaLineNamingNoFunctionCountsForEveryEntry) {
  const std::string log =
      std::string("ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized "
                  "due to program dependence on compiler-inserted WG.AR in divergent path.\n") +
      kRecordedPtxasLog;
  for (const char* entry : {"spill", "calls"}) {
    const PtxasReport r = parse_ptxas(log, entry);
    EXPECT_EQ(r.wgmma_serialized,
              std::vector<std::string>{"C7520: program dependence on compiler-inserted WG.AR in divergent path"})
        << entry;
    EXPECT_EQ(r.registers, 32) << entry;
  }
  // "in function 'X'" (no "the"), as ptxas words its other GMMA lines, names a function too.
  const std::string named =
      "ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to "
      "wgmma pipeline crossing function boundary in function 'calls'\n" + std::string(kRecordedPtxasLog);
  EXPECT_EQ(parse_ptxas(named, "calls").wgmma_serialized,
            std::vector<std::string>{"C7512: wgmma pipeline crossing function boundary"});
  EXPECT_TRUE(parse_ptxas(named, "spill").wgmma_serialized.empty());
}

TEST(Ptxas, LogWithoutWgmmaLinesLeavesTheReportEmpty) {
  for (const char* entry : {"spill", "calls"}) {
    const PtxasReport r = parse_ptxas(kRecordedPtxasLog, entry);
    EXPECT_TRUE(r.wgmma_serialized.empty()) << entry;
    EXPECT_EQ(wgmma_serialized_codes(r), "") << entry;
  }
  EXPECT_TRUE(parse_ptxas("", "spill").wgmma_serialized.empty());
}

// The JSON of a report (cache entries, database verdicts, landscapes, exports, the proposer's input)
// carries the field only when ptxas said so, and a document from before the field reads as none.
TEST(Ptxas, ReportJsonRoundTripsAndAnOlderDocumentReadsAsNotSerialised) {
  PtxasReport r;
  r.registers = 168;
  r.barriers = 1;
  const nlohmann::json plain = r;
  EXPECT_FALSE(plain.contains("wgmma_serialized")) << plain.dump();  // what every evo before it wrote
  r.wgmma_serialized = {kC7513, kC7511};
  const nlohmann::json j = r;
  ASSERT_TRUE(j.contains("wgmma_serialized")) << j.dump();
  const auto back = nlohmann::json::parse(j.dump()).get<PtxasReport>();
  EXPECT_EQ(back.wgmma_serialized, r.wgmma_serialized);
  EXPECT_EQ(back.registers, 168);
  EXPECT_EQ(back.barriers, 1);

  const auto old = nlohmann::json::parse(R"({"registers": 96, "spill_stores": 8, "spill_loads": 12, "stack_bytes": 16,
                                             "static_smem": 4096, "barriers": 2})")
                       .get<PtxasReport>();
  EXPECT_TRUE(old.wgmma_serialized.empty());
  EXPECT_EQ(old.registers, 96);
  EXPECT_EQ(old.spill_loads, 12);
  EXPECT_EQ(old.static_smem, 4096);
}

// tests/data/templates/wgmma_serialized.cu: CALL_BETWEEN=1 puts a call between two wgmma.mma_async,
// which NVRTC 13.0's ptxas serialises (C7511); its other entry, and CALL_BETWEEN=0, are clean.
TEST(Ptxas, LiveNvrtcLogReportsSerialisedWgmmaOfThatEntryOnly) {
  TempDir t;
  CompileCache cache(t.path / "cache");
  CompileRequest r;
  r.source_path = (kSource / "tests/data/templates/wgmma_serialized.cu").string();
  r.arch = "sm_90a";
  r.name_expression = "wgmma_pair";
  r.more_names = {"wgmma_pair_ref"};
  r.defines = {{"CALL_BETWEEN", "1"}};
  const Build serial = compile(r, cache);
  ASSERT_TRUE(serial.ok) << serial.log;
  ASSERT_EQ(serial.kernels.size(), 2u);
  EXPECT_EQ(serial.ptxas.wgmma_serialized, std::vector<std::string>{kC7511}) << serial.log;
  EXPECT_EQ(serial.kernels[0].ptxas.wgmma_serialized, std::vector<std::string>{kC7511}) << serial.log;
  EXPECT_TRUE(serial.kernels[1].ptxas.wgmma_serialized.empty()) << serial.log;
  EXPECT_GT(serial.kernels[1].ptxas.registers, 0);

  r.defines = {{"CALL_BETWEEN", "0"}};
  const Build pipelined = compile(r, cache);
  ASSERT_TRUE(pipelined.ok) << pipelined.log;
  EXPECT_TRUE(pipelined.ptxas.wgmma_serialized.empty()) << pipelined.log;

  // An entry cached by an evo that did not read these lines has none in its JSON: read back, the
  // report comes from the log it kept, and the key it is cached under is the same.
  const fs::path entry = cache.dir() / serial.key.substr(0, 2) / (serial.key + ".json");
  auto j = nlohmann::json::parse(read_bytes(entry));
  ASSERT_TRUE(j["ptxas"].contains("wgmma_serialized")) << j.dump();
  j["ptxas"].erase("wgmma_serialized");
  for (auto& k : j["kernels"]) k["ptxas"].erase("wgmma_serialized");
  write_text(entry, j.dump());
  r.defines = {{"CALL_BETWEEN", "1"}};
  EXPECT_EQ(cache.key(r), serial.key);
  const Build old = compile(r, cache);
  EXPECT_TRUE(old.from_cache);
  EXPECT_EQ(old.ptxas.wgmma_serialized, std::vector<std::string>{kC7511});
  ASSERT_EQ(old.kernels.size(), 2u);
  EXPECT_EQ(old.kernels[0].ptxas.wgmma_serialized, std::vector<std::string>{kC7511});
  EXPECT_TRUE(old.kernels[1].ptxas.wgmma_serialized.empty());
}

TEST(CompilePool, CompilesInParallelWorkersInRequestOrder) {
  TempDir t;
  TinyTemplate tiny(t.path);
  CompilePool pool(2, t.path / "cache");
  EXPECT_EQ(pool.jobs(), 2);
  std::vector<CompileRequest> rs;
  for (int s : {1, 2, 3, 4, 5}) {
    auto r = tiny.request();
    r.defines["SCALE"] = std::to_string(s);
    rs.push_back(r);
  }
  rs.push_back(rs[1]);  // the same build twice: compiled once, answered twice
  const auto builds = pool.compile_all(rs);
  ASSERT_EQ(builds.size(), rs.size());
  std::set<std::string> keys;
  CompileCache reader(t.path / "cache");
  for (std::size_t i = 0; i < rs.size(); ++i) {
    EXPECT_TRUE(builds[i].ok) << builds[i].log;
    EXPECT_EQ(builds[i].key, reader.key(rs[i])) << "result " << i << " is not its request's";
    EXPECT_TRUE(fs::is_regular_file(builds[i].cubin_path));
    keys.insert(builds[i].key);
  }
  EXPECT_EQ(keys.size(), 5u);
  EXPECT_EQ(builds[5].key, builds[1].key);
  EXPECT_EQ(cache_entries(t.path / "cache"), 5u);
  EXPECT_EQ(pool.pending(), 0u);

  // A second round is answered from the cache without a worker.
  const auto again = pool.compile_all(rs);
  for (const auto& b : again) EXPECT_TRUE(b.from_cache);
}

// A thousand small kernels: tens of seconds of NVRTC on this machine (100 take 2.4 s), so a kill
// lands while the worker compiles, however fast the machine.
std::string slow_nvrtc_source() {
  std::string source;
  for (int k = 0; k < 1000; ++k)
    source += "extern \"C\" __global__ void slow" + std::to_string(k) +
              "(float* y, const float* x) {\n  float acc = 0;\n#pragma unroll\n"
              "  for (int i = 0; i < 64; ++i) acc = acc * x[i * " + std::to_string(k + 1) +
              "] + __sinf(acc + i);\n  y[threadIdx.x] = acc;\n}\n";
  return source;
}

TEST(CompilePool, WorkerKilledMidCompileIsReportedAndReplaced) {
  TempDir t;
  write_text(t.path / "slow.cu", slow_nvrtc_source());
  TinyTemplate tiny(t.path);
  CompilePool pool(1, t.path / "cache");
  EXPECT_TRUE(child_pids().empty()) << "no worker is started before a compile needs one (a warm cache needs none)";

  CompileRequest slow;
  slow.source_path = (t.path / "slow.cu").string();
  slow.name_expression = "slow0";
  slow.arch = "sm_90";
  const auto id = pool.submit(slow);
  const auto workers = child_pids();
  ASSERT_EQ(workers.size(), 1u) << "expected exactly the pool's one worker";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(::kill(workers[0], SIGKILL), 0);

  auto r = pool.wait_any(60);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, id);
  EXPECT_FALSE(r->second.ok);
  EXPECT_EQ(r->second.log, "compile worker died (signal 9)");
  CompileCache reader(t.path / "cache");
  EXPECT_FALSE(reader.lookup(reader.key(slow)).has_value()) << "a death is not a verdict on the source";

  // The pool goes on with a fresh worker.
  const auto after = child_pids();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], workers[0]);
  const auto builds = pool.compile_all({tiny.request()});
  ASSERT_EQ(builds.size(), 1u);
  EXPECT_TRUE(builds[0].ok) << builds[0].log;
  EXPECT_FALSE(builds[0].from_cache);
}

// A compile running past the time limit (`--compile-timeout`) is stopped and answered as a failed
// build that says so, not cached; the worker is started again and the pool goes on.
TEST(CompilePool, ACompilePastTheTimeLimitIsStoppedAndAFailedBuildSayingSoNotCached) {
  TempDir t;
  write_text(t.path / "slow.cu", slow_nvrtc_source());
  TinyTemplate tiny(t.path);
  EXPECT_THROW(CompilePool(1, t.path / "cache", 0), UserError) << "a limit of no time";
  // A limit of 2 s, not less: the tiny build after the stop must fit in it on a loaded machine too
  // (at 0.5 s it failed while two other jobs ran beside ctest -j2).
  CompilePool pool(1, t.path / "cache", 2.0);
  CompileRequest slow;
  slow.source_path = (t.path / "slow.cu").string();
  slow.name_expression = "slow0";
  slow.arch = "sm_90";
  const auto t0 = std::chrono::steady_clock::now();
  const auto id = pool.submit(slow);
  const auto workers = child_pids();
  ASSERT_EQ(workers.size(), 1u);
  // Asked with a deadline of its own much later: the limit ends the compile, not the deadline.
  const auto r = pool.wait_any(60);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, id);
  EXPECT_FALSE(r->second.ok);
  EXPECT_NE(r->second.log.find("over the compile time limit of 2 s (--compile-timeout)"), std::string::npos)
      << r->second.log;
  EXPECT_GE(waited, 2.0);
  EXPECT_LT(waited, 6.0) << "stopped at the limit, not compiled to the end (tens of seconds)";
  EXPECT_GE(r->second.compile_ms, 2000) << "the seconds it ran, as its compile seconds";
  EXPECT_LE(r->second.compile_ms, 1000 * waited);
  EXPECT_TRUE(child_pids().empty()) << "its worker killed and reaped";
  CompileCache reader(t.path / "cache");
  EXPECT_FALSE(reader.lookup(reader.key(slow)).has_value()) << "a stopped compile is no verdict on the source";
  const auto builds = pool.compile_all({tiny.request()});
  ASSERT_EQ(builds.size(), 1u);
  EXPECT_TRUE(builds[0].ok) << builds[0].log;
}

// The run loop drops extra candidates still compiling when its budget is spent (engine/run.cpp):
// their compiles are stopped at once, not waited for, and nothing of theirs comes back.
TEST(CompilePool, ARunningCompileIsListedAndACancelledOneStoppedForgottenItsWorkerStartedAgainWhenNeeded) {
  TempDir t;
  write_text(t.path / "slow.cu", slow_nvrtc_source());
  TinyTemplate tiny(t.path);
  CompilePool pool(1, t.path / "cache");
  CompileRequest slow;
  slow.source_path = (t.path / "slow.cu").string();
  slow.name_expression = "slow0";
  slow.arch = "sm_90";
  const auto compiling = pool.submit(slow);
  const auto queued = pool.submit(tiny.request());  // behind it: the pool has one worker
  const auto workers = child_pids();
  ASSERT_EQ(workers.size(), 1u);
  EXPECT_EQ(pool.pending(), 2u);

  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // What is compiling now, and for how long: the slow one; the one behind it waits for a worker.
  const auto running = pool.running();
  ASSERT_EQ(running.size(), 1u);
  EXPECT_EQ(running[0].first, compiling);
  EXPECT_GE(running[0].second, 0.2);
  const auto t0 = std::chrono::steady_clock::now();
  const double ran = pool.cancel({compiling, queued, 12345});  // an unknown id is ignored
  EXPECT_GE(ran, 0.2) << "the seconds the stopped compile had run";
  EXPECT_LT(ran, 5.0);
  EXPECT_EQ(pool.pending(), 0u);
  EXPECT_FALSE(pool.wait_any(0.5).has_value()) << "nothing cancelled comes back";
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0)
      << "the slow compile is stopped, not waited for";
  EXPECT_TRUE(child_pids().empty()) << "its worker killed and reaped";
  EXPECT_TRUE(pool.running().empty());
  CompileCache reader(t.path / "cache");
  EXPECT_FALSE(reader.lookup(reader.key(slow)).has_value()) << "a stopped compile is no verdict";

  // A request another submit also waits for is not stopped by cancelling one of the two.
  auto scaled = tiny.request();
  scaled.defines["SCALE"] = "7";
  const auto a = pool.submit(scaled), b = pool.submit(scaled);
  EXPECT_EQ(pool.cancel({a}), 0.0) << "nothing stopped";
  const auto r = pool.wait_any(60);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, b);
  EXPECT_TRUE(r->second.ok) << r->second.log;
  EXPECT_EQ(pool.pending(), 0u);
  EXPECT_EQ(child_pids().size(), 1u) << "a worker started again when a compile needed one";
}

// The pool's worker processes once it has compiled the tiny template (a worker that compiled stays
// for the next compile); empty, with a failure said, when the compile or the worker is missing.
std::vector<pid_t> workers_after_one_compile(CompilePool& pool, const TinyTemplate& tiny) {
  const auto builds = pool.compile_all({tiny.request()});
  EXPECT_EQ(builds.size(), 1u);
  if (builds.size() != 1u || !builds[0].ok) {
    ADD_FAILURE() << (builds.empty() ? std::string("no build") : builds[0].log);
    return {};
  }
  const auto workers = child_pids();
  EXPECT_FALSE(workers.empty()) << "the worker that compiled stays for the next compile";
  return workers;
}

// The workers run ten nice steps below the run (at most 19), so compiles yield the CPU to the
// coordinator's input draws and the GPU workers' host side, which the GPUs wait on.
TEST(CompilePool, WorkersRunBelowTheRunsPriority) {
  TempDir t;
  TinyTemplate tiny(t.path);
  CompilePool pool(2, t.path / "cache");
  const auto workers = workers_after_one_compile(pool, tiny);
  ASSERT_FALSE(workers.empty());
  errno = 0;
  const int own = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  for (const pid_t w : workers) {
    errno = 0;
    const int theirs = ::getpriority(PRIO_PROCESS, static_cast<id_t>(w));
    ASSERT_EQ(errno, 0) << "worker " << w;
    EXPECT_EQ(theirs, std::min(19, own + 10)) << "worker " << w;
  }
}

// A compile worker is this program started anew, not a fork of the run: a fork shares the run's
// pages copy-on-write, so each page the run writes after a worker starts is copied first. The run
// starts its workers while it draws GREEN's first inputs (on 4 x H200, 64 forks made two 67 MB
// fills take 2.1-3.0 s against 0.5 s alone: docs/results/scale14 and scale15).
TEST(CompilePool, StartingAWorkerCopiesNoneOfTheRunsMemory) {
  TempDir t;
  TinyTemplate tiny(t.path);
  std::vector<char> drawn(std::size_t{64} << 20);
  std::memset(drawn.data(), 1, drawn.size());  // every page the run's own before the worker starts
  CompilePool pool(2, t.path / "cache");
  const auto workers = workers_after_one_compile(pool, tiny);
  ASSERT_FALSE(workers.empty());
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  std::memset(drawn.data(), 2, drawn.size());
  ::getrusage(RUSAGE_SELF, &after);
  // Forked, the 16 384 pages fault once each (or once per huge page: 32); started anew, none do.
  EXPECT_LT(after.ru_minflt - before.ru_minflt, 16) << "pages written after a worker started were copied first";
  for (const pid_t w : workers) {
    std::ifstream cmd("/proc/" + std::to_string(w) + "/cmdline");
    std::string name;
    std::getline(cmd, name, '\0');
    EXPECT_EQ(name, "evo-compile-worker") << "worker " << w;
  }
}

TEST(CompilePool, UnreadableTemplateIsAUserErrorAtSubmit) {
  TempDir t;
  CompilePool pool(1, t.path / "cache");
  CompileRequest r;
  r.source_path = (t.path / "gone.cu").string();
  r.name_expression = "k";
  r.arch = "sm_90";
  EXPECT_THROW(pool.submit(r), UserError);
  EXPECT_EQ(pool.pending(), 0u);
}

// ---- shipped profiles and a kernel written for another tuner ----------------------------------------

// A seeded sample of every shipped profile's valid configurations, and its reference, compile for
// sm_90, or for the profile's own arch when that is sm_90a (wgmma needs it) (profiles added later
// are picked up: the test iterates profiles/*.json).
TEST(ShippedProfiles, SeededSampleOfEachCompilesForSm90) {
  TempDir t;
  CompilePool pool(0, t.path / "cache");
  std::size_t profiles = 0;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(kSource / "profiles"))
    if (e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    const Profile p = load_profile(f);
    KnobSpace space(p);
    auto valid = space.enumerate_valid();
    ASSERT_FALSE(valid.empty());
    std::mt19937_64 rng(20261122);
    std::shuffle(valid.begin(), valid.end(), rng);
    valid.resize(std::min<std::size_t>(valid.size(), 3));
    if (std::find(valid.begin(), valid.end(), p.baseline) == valid.end()) valid.push_back(p.baseline);
    const std::string arch = p.arch == "sm_90a" ? p.arch : "sm_90";
    // Every template of every launch (one request each), and the reference's when it is a kernel.
    std::vector<CompileRequest> rs;
    std::vector<std::string> what;
    for (const auto& c : valid)
      for (const auto& r : candidate_requests(p, c, arch)) {
        rs.push_back(r);
        what.push_back(config_text(c) + " " + fs::path(r.source_path).filename().string());
      }
    for (const auto& r : reference_requests(p, arch)) {
      rs.push_back(r);
      what.push_back("reference " + fs::path(r.source_path).filename().string());
    }
    const auto builds = pool.compile_all(rs);
    for (std::size_t i = 0; i < builds.size(); ++i) {
      EXPECT_TRUE(builds[i].ok) << what[i] << ":\n" << builds[i].log;
      for (const auto& k : launch_kernels(builds[i])) {
        EXPECT_FALSE(k.lowered_name.empty()) << what[i];
        EXPECT_GT(k.ptxas.registers, 0) << what[i] << " " << k.lowered_name;
      }
    }
    ++profiles;
  }
  EXPECT_GE(profiles, 1u);
}

// Knob combinations the attention template cannot build stop at a message naming the knob, not
// at a wrong kernel: the profiles' constraints exclude them, the template says why.
TEST(ShippedProfiles, AttentionTemplateRefusesIllegalKnobsNamingThem) {
  TempDir t;
  CompileCache cache(t.path / "cache");
  const Profile fp16 = load_profile(kSource / "profiles/sdpa_fp16_wgmma.json");
  struct Case {
    std::string arch;
    Config change;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"sm_90", {}, "MMA_PATH=2 and 3 need -arch=sm_90a"},
      {"sm_90a", {{"WARP_SPEC", 1}}, "MMA_PATH=2 or 3 needs WARP_SPEC=0"},
      {"sm_90a", {{"TILE_M", 128}}, "MMA_PATH=2 or 3 needs TILE_M = 64 x (NUM_WARPS/4)"},
      {"sm_90a", {{"WG_PIPE", 1}}, "WG_PIPE=1 needs MMA_PATH=2 and STAGES=3"},
      {"sm_90a", {{"MMA_PATH", 1}, {"SWIZZLE", 1}, {"TILE_M", 64}, {"NUM_WARPS", 4}, {"STAGES", 1}, {"USE_WMMA_QK", 0}},
       "MMA_PATH=1 needs USE_WMMA_QK=1"},
  };
  for (const auto& c : cases) {
    Config cfg = fp16.baseline;
    for (const auto& [k, v] : c.change) cfg[k] = v;
    const Build b = compile(candidate_request(fp16, cfg, c.arch), cache);
    EXPECT_FALSE(b.ok) << c.says;
    EXPECT_NE(b.log.find(c.says), std::string::npos) << c.says << "\n" << b.log;
  }
  // And the baseline itself builds for sm_90a.
  EXPECT_TRUE(compile(candidate_request(fp16, fp16.baseline, "sm_90a"), cache).ok);

  // fp8 wgmma keeps one fp16 copy of V, which WG_PIPE's overlap would overwrite under a running P·V.
  const Profile fp8 = load_profile(kSource / "profiles/sdpa_fp8_wgmma.json");
  Config piped = fp8.baseline;
  piped["WG_PIPE"] = 1;
  piped["STAGES"] = 3;
  const Build b8 = compile(candidate_request(fp8, piped, "sm_90a"), cache);
  EXPECT_FALSE(b8.ok);
  EXPECT_NE(b8.log.find("MMA_PATH=2 with IN_FP8=1 needs WG_PIPE=0"), std::string::npos) << b8.log;
  EXPECT_TRUE(compile(candidate_request(fp8, fp8.baseline, "sm_90a"), cache).ok);

  // MMA_PATH=3 (FlashAttention-3): its producer loads by TMA, ping-pong needs two consumer
  // warpgroups, and the e4m3 P·V transposes V into rows of 64 or 128 keys.
  const Profile d128 = load_profile(kSource / "profiles/sdpa_fp16_wgmma_d128.json");
  Config fa3 = d128.baseline;
  for (const auto& [k, v] : Config{{"MMA_PATH", 3}, {"TILE_M", 128}, {"TILE_N", 128}, {"NUM_WARPS", 8},
                                   {"USE_TMA", 1}, {"WG_PIPE", 1}, {"PINGPONG", 1}})
    fa3[k] = v;
  EXPECT_TRUE(compile(candidate_request(d128, fa3, "sm_90a"), cache).ok);
  const std::vector<Case> fa3_cases = {
      {"sm_90a", {{"USE_TMA", 0}}, "MMA_PATH=3 needs USE_TMA=1"},
      {"sm_90a", {{"SPLIT_KV", 2}}, "MMA_PATH=3 needs USE_TMA=1 (the producer's loads), STAGES >= 2, SPLIT_KV=1"},
      {"sm_90a", {{"TILE_M", 64}, {"NUM_WARPS", 4}}, "PINGPONG=1 needs MMA_PATH=3 and NUM_WARPS 8 or 12"},
      {"sm_90a", {{"MMA_PATH", 2}, {"PINGPONG", 0}, {"LAZY_RESCALE", 1}}, "LAZY_RESCALE=1 needs MMA_PATH=3"},
      {"sm_90a", {{"TILE_M", 256}, {"NUM_WARPS", 16}}, "NUM_WARPS must be 2, 4 or 8 (MMA_PATH=3 also takes 12"},
  };
  for (const auto& c : fa3_cases) {
    Config cfg = fa3;
    for (const auto& [k, v] : c.change) cfg[k] = v;
    const Build b = compile(candidate_request(d128, cfg, c.arch), cache);
    EXPECT_FALSE(b.ok) << c.says;
    EXPECT_NE(b.log.find(c.says), std::string::npos) << c.says << "\n" << b.log;
  }
  // Three consumer warpgroups: 192 query rows, only on MMA_PATH=3 (its producer warpgroup's setmaxnreg
  // leaves them 160 registers a thread), and with ping-pong round all three.
  const Profile fp16_64 = load_profile(kSource / "profiles/sdpa_fp16_wgmma.json");
  Config three = fp16_64.baseline;
  for (const auto& [k, v] : Config{{"MMA_PATH", 3}, {"TILE_M", 192}, {"TILE_N", 128}, {"NUM_WARPS", 12}, {"USE_TMA", 1},
                                   {"WG_PIPE", 1}, {"PINGPONG", 1}})
    three[k] = v;
  const Build b3 = compile(candidate_request(fp16_64, three, "sm_90a"), cache);
  EXPECT_TRUE(b3.ok) << b3.log;
  EXPECT_EQ(b3.ptxas.spill_stores, 0) << b3.log;
  // ... and persistent, with STREAM_K's shares: the producer copies Q a chunk at a time (Q_LEAN) so that it keeps 32
  // registers and the consumers their 160 (with 48 it left them 152: 80 bytes spilled, the wgmma serialised)
  Config lean = three;
  lean["PERSIST"] = 1;
  lean["STREAM_K"] = 1;
  const Build bl = compile(candidate_request(fp16_64, lean, "sm_90a"), cache);
  EXPECT_TRUE(bl.ok) << bl.log;
  EXPECT_EQ(bl.ptxas.spill_stores, 0) << bl.log;
  EXPECT_EQ(bl.log.find("C7512"), std::string::npos) << bl.log;
  lean["PERSIST"] = 0;  // STREAM_K divides a persistent block's items
  const Build bs = compile(candidate_request(fp16_64, lean, "sm_90a"), cache);
  EXPECT_FALSE(bs.ok);
  EXPECT_NE(bs.log.find("STREAM_K=1 needs MMA_PATH=3 and PERSIST=1"), std::string::npos) << bs.log;
  three["MMA_PATH"] = 2;
  three["PINGPONG"] = 0;
  three["WG_PIPE"] = 0;
  const Build b3_2 = compile(candidate_request(fp16_64, three, "sm_90a"), cache);
  EXPECT_FALSE(b3_2.ok);
  EXPECT_NE(b3_2.log.find("TILE_M must be 16, 32, 64 or 128 (MMA_PATH=3 also takes 192)"), std::string::npos) << b3_2.log;
  EXPECT_NE(b3_2.log.find("NUM_WARPS must be 2, 4 or 8 (MMA_PATH=3 also takes 12"), std::string::npos) << b3_2.log;

  const Profile pv8 = load_profile(kSource / "profiles/sdpa_fp8pv_wgmma_d128.json");
  EXPECT_TRUE(compile(candidate_request(pv8, pv8.baseline, "sm_90a"), cache).ok);
  Config pv8_wide = pv8.baseline;  // 192 keys: the transposed V in 32-key panels (vt_off)
  pv8_wide["TILE_N"] = 192;
  EXPECT_TRUE(compile(candidate_request(pv8, pv8_wide, "sm_90a"), cache).ok);
  pv8_wide["TILE_N"] = 176;  // a wgmma width MMA_PATH=3 has, but not a whole number of e4m3 k-steps
  const Build bn = compile(candidate_request(pv8, pv8_wide, "sm_90a"), cache);
  EXPECT_FALSE(bn.ok);
  EXPECT_NE(bn.log.find("TILE_N a multiple of 32 (the e4m3 k-step)"), std::string::npos) << bn.log;
  pv8_wide["TILE_N"] = 96;  // no wgmma width of MMA_PATH=3's
  const Build b96 = compile(candidate_request(pv8, pv8_wide, "sm_90a"), cache);
  EXPECT_FALSE(b96.ok);
  EXPECT_NE(b96.log.find("MMA_PATH=3 needs TILE_N 32, 64, 128, 160, 176, 192 or 224"), std::string::npos) << b96.log;

  // SPLIT_KV > 1 combines through a thread-block cluster: sm_80 has none, and says so.
  const Profile mma = load_profile(kSource / "profiles/sdpa_fp16.json");
  Config split = {{"MMA_PATH", 1}, {"TILE_M", 64}, {"TILE_N", 64}, {"NUM_WARPS", 4}, {"STAGES", 2},
                  {"USE_CP_ASYNC", 1}, {"USE_WMMA_QK", 1}, {"USE_WMMA_PV", 1}, {"SWIZZLE", 2},
                  {"WARP_SPEC", 0}, {"SPLIT_KV", 2}};
  const Build b80 = compile(candidate_request(mma, split, "sm_80"), cache);
  EXPECT_FALSE(b80.ok);
  EXPECT_NE(b80.log.find("SPLIT_KV > 1 needs sm_90"), std::string::npos) << b80.log;
  EXPECT_TRUE(compile(candidate_request(mma, split, "sm_90"), cache).ok);
}

// Each sdpa profile's launch.shared_bytes expression is the template's own SMEM_BYTES: a profile that
// asks for less makes the kernel trap, one that asks for more costs occupancy. The template checks a
// value it is given (SDPA_EXPECT_SMEM_BYTES) with a static_assert; compiled to PTX only (no ptxas), for
// a spread of SPLIT_KV > 1 configurations (their mailbox is a term of its own), MMA_PATH=3 ones for every
// tile shape, ring depth and Q-buffer count, and a few others.
// One test a profile, so that ctest spreads the compiles over the machine's cores.
class SdpaSharedBytes : public ::testing::TestWithParam<std::string> {};

TEST_P(SdpaSharedBytes, ExpressionIsTheTemplates) {
  TempDir t;
  CompileCache cache(t.path / "cache");
  std::size_t checked = 0;
  {
    const std::string name = GetParam();
    const Profile p = load_profile(kSource / "profiles" / (name + ".json"));
    ASSERT_FALSE(p.problems.empty()) << name;
    const std::string virt = "compute_" + p.arch.substr(p.arch.find('_') + 1);  // sm_90a -> compute_90a
    std::vector<Config> split, whole;
    for (const Config& c : KnobSpace(p).enumerate_valid()) (c.at("SPLIT_KV") > 1 ? split : whole).push_back(c);
    std::vector<Config> sample;  // (sdpa_fp8_d128 has no split configuration)
    for (std::size_t i = 0; i < split.size(); i += (split.size() + 5) / 6) sample.push_back(split[i]);
    sample.push_back(whole.front());
    sample.push_back(whole.back());
    const auto vregs = std::find_if(whole.begin(), whole.end(), [](const Config& c) {  // V_REGS=1: V has no ring
      return c.count("V_REGS") && c.at("V_REGS") == 1 && c.at("STAGES") > 1;
    });
    if (vregs != whole.end()) sample.push_back(*vregs);
    // MMA_PATH=3 (its own rings of K, V and rewritten V tiles, its Q buffers and mbarriers): one configuration
    // for each combination of the knobs its shared memory depends on
    std::set<std::vector<long>> fa3;
    for (const Config& c : whole)
      if (c.at("MMA_PATH") == 3 && fa3.insert({c.at("TILE_M"), c.at("TILE_N"), c.at("STAGES"), c.at("PERSIST"),
                                               c.count("ROWSUM_MMA") ? c.at("ROWSUM_MMA") : 0,
                                               c.count("STREAM_K") ? c.at("STREAM_K") : 0}).second)
        sample.push_back(c);
    for (const Config& c : sample) {
      const auto bytes = launch_geometry(p.kernel, p.problems.front(), c).shared_bytes;
      CompileRequest r = candidate_request(p, c, virt);
      r.defines["SDPA_EXPECT_SMEM_BYTES"] = std::to_string(bytes);
      const Build b = compile(r, cache);
      EXPECT_TRUE(b.ok) << name << " " << bytes << " bytes\n" << b.log;
      ++checked;
    }
    // The check is live: one byte off fails, naming the expression.
    CompileRequest off = candidate_request(p, sample.front(), virt);
    off.defines["SDPA_EXPECT_SMEM_BYTES"] =
        std::to_string(launch_geometry(p.kernel, p.problems.front(), sample.front()).shared_bytes + 1);
    const Build bad = compile(off, cache);
    EXPECT_FALSE(bad.ok) << name;
    EXPECT_NE(bad.log.find("launch.shared_bytes differs"), std::string::npos) << bad.log;
  }
  EXPECT_GE(checked, 2u);  // the first and last unsplit configurations at least
}

INSTANTIATE_TEST_SUITE_P(ShippedProfiles, SdpaSharedBytes,
                         ::testing::Values("sdpa_fp16_wgmma", "sdpa_fp8_wgmma", "sdpa_fp16", "sdpa_fp8", "sdpa_fp16_d128",
                                           "sdpa_fp8_d128", "sdpa_fp16_wgmma_d128", "sdpa_fp8_wgmma_d128",
                                           "sdpa_fp8pv_wgmma_d128", "sdpa_fp8pv_wgmma"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// SDPA_TRACE (bench/timeline.py's stamps) is a diagnostic define, not a knob: with it an MMA_PATH=3 kernel
// declares the stamp array and reads the clock in its steps; without it there is neither, so no searched
// kernel carries them.
TEST(ShippedProfiles, SdpaTraceStampsOnlyWhenAsked) {
  TempDir t;
  CompileCache cache(t.path / "cache");
  const Profile p = load_profile(kSource / "profiles" / "sdpa_fp8pv_wgmma_d128.json");
  Config c = p.baseline;
  ASSERT_EQ(c.at("MMA_PATH"), 3);
  CompileRequest plain = candidate_request(p, c, "compute_90a");
  CompileRequest traced = plain;
  traced.defines["SDPA_TRACE"] = "2";
  const Build a = compile(plain, cache), b = compile(traced, cache);
  ASSERT_TRUE(a.ok) << a.log;
  ASSERT_TRUE(b.ok) << b.log;
  const std::string pa = read_bytes(a.cubin_path), pb = read_bytes(b.cubin_path);
  EXPECT_EQ(pa.find("sdpa_trace"), std::string::npos);
  EXPECT_EQ(pa.find("%clock64"), std::string::npos);
  EXPECT_NE(pb.find(".global .align 8 .b8 sdpa_trace[32768];"), std::string::npos) << pb.substr(0, 2000);  // 2 x 4 x 64 x 8 x 8 bytes
  EXPECT_NE(pb.find("%clock64"), std::string::npos);
}

TEST(ForeignKernel, ProfileLoadsWithTemplatedEntryAndConstantTable) {
  const Profile p = load_profile(kSource / "tests/data/profiles/foreign_kernel.json");
  EXPECT_EQ(p.kernel.name, "foreign::scale<float, block_size_x, tile_size_x>");
  ASSERT_EQ(p.buffers.size(), 3u);
  EXPECT_EQ(p.buffers[0].symbol, "coeffs");
  KnobSpace space(p);
  EXPECT_EQ(space.size(), 20u);
  const auto valid = space.enumerate_valid();
  EXPECT_EQ(valid.size(), 19u);  // 512 x 8 = 4096 > 2048 is the one excluded
  EXPECT_FALSE(space.why_invalid(p.baseline).has_value());
  // Grid as the problem size divided by a product of knobs.
  const auto g = launch_geometry(p.kernel, *p.find_problem("large"), {{"block_size_x", 256}, {"tile_size_x", 4}});
  EXPECT_EQ(g.grid[0], 16777216u / (256 * 4));
  EXPECT_EQ(g.block[0], 256u);
}

TEST(ForeignKernel, EveryConfigCompilesAndTheLoweredNameIsResolved) {
  TempDir t;
  const Profile p = load_profile(kSource / "tests/data/profiles/foreign_kernel.json");
  KnobSpace space(p);
  const auto valid = space.enumerate_valid();
  std::vector<CompileRequest> rs;
  for (const auto& c : valid) rs.push_back(candidate_request(p, c));
  CompilePool pool(0, t.path / "cache");
  const auto builds = pool.compile_all(rs);
  std::set<std::string> lowered;
  for (std::size_t i = 0; i < builds.size(); ++i) {
    ASSERT_TRUE(builds[i].ok) << config_text(valid[i]) << ":\n" << builds[i].log;
    // The Itanium-mangled instantiation, with the knobs' values as template arguments.
    const std::string want = "_ZN7foreign5scaleIfLi" + std::to_string(valid[i].at("block_size_x")) + "ELi" +
                             std::to_string(valid[i].at("tile_size_x")) + "EEEvPT_PKS1_i";
    EXPECT_EQ(builds[i].lowered_name, want);
    EXPECT_GT(builds[i].ptxas.registers, 0) << "ptxas figures found under the lowered name";
    // The __constant__ table is a symbol of the cubin, for the host to fill before the launch.
    EXPECT_NE(read_bytes(builds[i].cubin_path).find("coeffs"), std::string::npos);
    lowered.insert(builds[i].lowered_name);
  }
  EXPECT_EQ(lowered.size(), valid.size());

  CompileCache cache(t.path / "cache");
  const Build ref = compile(reference_request(p), cache);
  ASSERT_TRUE(ref.ok) << ref.log;
  EXPECT_EQ(ref.lowered_name, "scale_ref");
}

TEST(ForeignKernel, KnobsWithoutDefaultsAreRequired) {
  // Without evo's -D values the template does not compile: the knobs really have no default.
  TempDir t;
  const Profile p = load_profile(kSource / "tests/data/profiles/foreign_kernel.json");
  CompileRequest r = candidate_request(p, p.baseline);
  r.defines.erase("tile_size_x");
  r.name_expression = "foreign::scale<float, block_size_x, 1>";
  CompileCache cache(t.path / "cache");
  const Build b = compile(r, cache);
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.log.find("tile_size_x"), std::string::npos) << b.log;
}


// ---- several launches: one program per template, joined in launch order ----

TEST(Compiler, LaunchesOfOneTemplateCompileAsOneProgramWithEveryEntry) {
  TempDir t;
  CompileCache cache(t.path / "cache");
  const Profile p = load_profile(kSource / "profiles/reduce_sum.json");
  const auto rs = candidate_requests(p, p.baseline, "sm_90");
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].name_expression, "partial_sums");
  EXPECT_EQ(rs[0].more_names, std::vector<std::string>{"final_sum"});
  EXPECT_EQ(rs[0].defines.at("FINAL_BLOCK"), "256");  // every knob reaches the template
  CompileRequest alone = rs[0];
  alone.more_names.clear();
  EXPECT_NE(cache.key(alone), cache.key(rs[0]));  // the entries are part of the key

  const Build b = compile(rs[0], cache);
  ASSERT_TRUE(b.ok) << b.log;
  ASSERT_EQ(b.kernels.size(), 2u);
  EXPECT_EQ(b.kernels[0].lowered_name, "partial_sums");
  EXPECT_EQ(b.kernels[1].lowered_name, "final_sum");
  EXPECT_EQ(b.lowered_name, "partial_sums");
  for (const auto& k : b.kernels) {
    EXPECT_GT(k.ptxas.registers, 0) << k.lowered_name;
    EXPECT_EQ(k.cubin_path, b.cubin_path);
  }
  const Build u = launch_build(p.launches(), rs, {b});
  EXPECT_TRUE(u.ok);
  EXPECT_EQ(u.key, b.key);
  ASSERT_EQ(u.kernels.size(), 2u);
  EXPECT_EQ(u.kernels[1].name_expression, "final_sum");
  // From the cache: the same entries, their cubin where the cache holds it.
  const Build again = compile(rs[0], cache);
  EXPECT_TRUE(again.from_cache);
  ASSERT_EQ(again.kernels.size(), 2u);
  EXPECT_EQ(again.kernels[1].lowered_name, "final_sum");
  EXPECT_EQ(again.kernels[1].cubin_path, again.cubin_path);
  EXPECT_EQ(again.kernels[1].ptxas.registers, b.kernels[1].ptxas.registers);
}

TEST(Compiler, LaunchesOfTwoTemplatesCompileOncePerTemplateAndJoinInLaunchOrder) {
  TempDir t;
  write_text(t.path / "a.cu", "extern \"C\" __global__ void first(float* Y, int N) { if (threadIdx.x < N) Y[threadIdx.x] = 1; }\n");
  write_text(t.path / "b.cu",
             "#ifndef K\n#define K 1\n#endif\n"
             "extern \"C\" __global__ void second(float* Y, int N) { if (threadIdx.x < N) Y[threadIdx.x] += K; }\n"
             "extern \"C\" __global__ void third(float* Y, int N) { if (threadIdx.x < N) Y[threadIdx.x] *= 2; }\n");
  auto launch = [](const char* tmpl, const char* kernel) {
    return nlohmann::ordered_json{{"template", tmpl}, {"kernel", kernel}, {"args", {"Y", "N"}},
                                  {"launch", {{"grid", {1}}, {"block", {32}}}}};
  };
  nlohmann::ordered_json j = {
      {"knobs", {{"K", {1, 2}}}},
      {"baseline", {{"K", 1}}},
      {"problems", {{{"name", "p"}, {"sizes", {{"N", 32}}}}}},
      {"buffers", {{{"name", "Y"}, {"dtype", "f32"}, {"shape", {"N"}}, {"role", "output"}}}},
      {"launches", {launch("b.cu", "second"), launch("a.cu", "first"), launch("b.cu", "third")}},
      {"reference", {{"template", "a.cu"}, {"kernel", "first"}, {"args", {"Y", "N"}},
                     {"launch", {{"grid", {1}}, {"block", {32}}}}}}};
  write_text(t.path / "two.json", j.dump(2));
  const Profile p = load_profile(t.path / "two.json");
  const auto rs = candidate_requests(p, {{"K", 2}}, "sm_90");
  ASSERT_EQ(rs.size(), 2u);  // b.cu (first used) with both of its entries, then a.cu
  EXPECT_EQ(fs::path(rs[0].source_path).filename(), "b.cu");
  EXPECT_EQ(rs[0].name_expression, "second");
  EXPECT_EQ(rs[0].more_names, std::vector<std::string>{"third"});
  EXPECT_EQ(fs::path(rs[1].source_path).filename(), "a.cu");
  EXPECT_TRUE(rs[1].more_names.empty());
  EXPECT_EQ(rs[1].defines.at("K"), "2");

  CompilePool pool(2, t.path / "cache");
  const auto builds = pool.compile_all(rs);
  const Build u = launch_build(p.launches(), rs, builds);
  ASSERT_TRUE(u.ok) << u.log;
  ASSERT_EQ(u.kernels.size(), 3u);
  EXPECT_EQ(u.kernels[0].lowered_name, "second");
  EXPECT_EQ(u.kernels[1].lowered_name, "first");
  EXPECT_EQ(u.kernels[2].lowered_name, "third");
  EXPECT_EQ(u.kernels[0].cubin_path, u.kernels[2].cubin_path);
  EXPECT_NE(u.kernels[0].cubin_path, u.kernels[1].cubin_path);
  EXPECT_EQ(u.key, launch_build_key({builds[0].key, builds[1].key}));
  EXPECT_NE(u.key, builds[0].key);
  EXPECT_EQ(u.lowered_name, "second");

  // One template that does not compile fails the candidate, its log naming the template.
  write_text(t.path / "a.cu", "extern \"C\" __global__ void first(float* Y, int N) { this is not cuda; }\n");
  const auto rs2 = candidate_requests(p, {{"K", 1}}, "sm_90");
  const Build bad = launch_build(p.launches(), rs2, pool.compile_all(rs2));
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(bad.kernels.empty());
  EXPECT_NE(bad.log.find("a.cu:\n"), std::string::npos) << bad.log;
}

}  // namespace
}  // namespace evo
