// TMA tensor maps (a profile's tensor_maps): the layout evaluated per problem and the rules the
// driver enforces, the static gate refusing a map before anything runs, the test kernel compiling
// for Hopper, and on a GPU (skipped, saying why, without one) a copy through an encoded map that
// must give back the buffer with zeros past its end. The kernel and its profile are
// tests/data/templates/tma_copy.cu and tests/data/profiles/tma_copy.json.
#include <cuda.h>  // CU_TENSOR_MAP_DATA_TYPE_* (constants only)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/buffers.h"
#include "engine/compiler.h"
#include "engine/device.h"
#include "engine/error.h"
#include "engine/launch.h"
#include "engine/profile.h"
#include "gates/static_gate.h"
#include "tests/support.h"

namespace evo {
namespace {

namespace fs = std::filesystem;
const fs::path kSource = evo::test::source_root();

// sdpa's K: an f16 [B, H, S, D] buffer as the 3-D map the attention kernels read, dims innermost
// first; `edit` changes the map before it is evaluated.
struct SdpaLike {
  Profile profile;
  Problem problem{"odd_s", {{"B", 2}, {"H", 8}, {"S", 250}, {"D", 64}}, {}, 0};
  SdpaLike() {
    BufferSpec k;
    k.name = "K";
    k.dtype = DType::F16;
    k.shape = {"B", "H", "S", "D"};
    profile.buffers.push_back(k);
    TensorMapSpec m;
    m.name = "k_map";
    m.buffer = "K";
    m.dims = {"D", "S", "B * H"};
    m.box = {"64", "64", "1"};
    m.swizzle_bytes = 128;
    profile.tensor_maps.push_back(m);
    profile.problems.push_back(problem);
  }
  TensorMapSpec& map() { return profile.tensor_maps[0]; }
  TensorMapLayout layout() { return tensor_map_layout(map(), profile, problem, {}); }
  std::string error() {
    try {
      layout();
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
};

TEST(TensorMapLayout, PackedSdpaKeysGiveByteStridesAndTheBox) {
  SdpaLike s;
  const TensorMapLayout L = s.layout();
  EXPECT_EQ(L.name, "k_map");
  EXPECT_EQ(L.dtype, DType::F16);
  ASSERT_EQ(L.rank, 3);
  EXPECT_EQ(L.dims[0], 64u);
  EXPECT_EQ(L.dims[1], 250u);
  EXPECT_EQ(L.dims[2], 16u);
  EXPECT_EQ(L.strides_bytes[0], 128u);    // one row of D halves
  EXPECT_EQ(L.strides_bytes[1], 32000u);  // one (b, h) head: S rows
  EXPECT_EQ(L.box[0], 64u);
  EXPECT_EQ(L.box[1], 64u);
  EXPECT_EQ(L.box[2], 1u);
  EXPECT_EQ(L.swizzle_bytes, 128);
  EXPECT_EQ(L.l2_promotion_bytes, 128);
  EXPECT_STREQ(tensor_map_data_type(L.dtype).name, "CU_TENSOR_MAP_DATA_TYPE_FLOAT16");
  EXPECT_EQ(tensor_map_data_type(L.dtype).value, CU_TENSOR_MAP_DATA_TYPE_FLOAT16);
  EXPECT_STREQ(tensor_map_data_type(DType::FP8_E4M3).name, "CU_TENSOR_MAP_DATA_TYPE_UINT8");  // raw bytes
  EXPECT_EQ(tensor_map_data_type(DType::FP8_E4M3).value, CU_TENSOR_MAP_DATA_TYPE_UINT8);
}

struct BadMapCase {
  std::string name;
  std::function<void(SdpaLike&)> edit;
  std::string expected;  // substring of the message, after the field
};
void PrintTo(const BadMapCase& c, std::ostream* os) { *os << c.name; }  // (else gtest prints raw bytes)

class BadTensorMap : public ::testing::TestWithParam<BadMapCase> {};

TEST_P(BadTensorMap, IsRefusedNamingTheFieldTheMapAndTheProblem) {
  SdpaLike s;
  GetParam().edit(s);
  const std::string err = s.error();
  ASSERT_FALSE(err.empty()) << "layout was accepted";
  EXPECT_NE(err.find(GetParam().expected), std::string::npos) << err;
  EXPECT_NE(err.find("(map k_map, problem odd_s)"), std::string::npos) << err;
}

INSTANTIATE_TEST_SUITE_P(
    Rules, BadTensorMap,
    ::testing::Values(
        BadMapCase{"inner_box_wider_than_swizzle", [](SdpaLike& s) { s.map().box[0] = "128"; },
                   "tensor_maps[0].box[0]: 128 x f16 = 256 bytes: more than the 128-byte swizzle span"},
        BadMapCase{"box_over_256", [](SdpaLike& s) { s.map().box[1] = "2 * 256"; },
                   "tensor_maps[0].box[1]: '2 * 256' = 512: must be an integer from 1 to 256"},
        BadMapCase{"dims_not_the_buffer", [](SdpaLike& s) { s.map().dims = {"D", "S", "B"}; },
                   "tensor_maps[0].dims: 64 x 250 x 2 = 32000 elements, buffer K has 256000"},
        BadMapCase{"inner_box_not_16_bytes", [](SdpaLike& s) { s.map().box[0] = "4"; },
                   "tensor_maps[0].box[0]: 4 x f16 = 8 bytes: the inner box must be a multiple of 16 bytes"},
        BadMapCase{"stride_not_16_bytes",
                   [](SdpaLike& s) {
                     s.map().dims = {"D / 16", "S * 16", "B * H"};  // rows of 4 halves: an 8-byte stride
                     s.map().box[0] = "8";
                   },
                   "tensor_maps[0].dims[0]: the byte stride of dims[1] is 8 (4 x f16): must be a multiple of 16"},
        BadMapCase{"dim_zero", [](SdpaLike& s) { s.map().dims[1] = "S - 250"; },
                   "tensor_maps[0].dims[1]: 'S - 250' = 0: must be an integer from 1 to 2^32"}),
    [](const auto& info) { return info.param.name; });

// The static gate evaluates every map on every problem: a box that fits one problem's swizzle and
// not another's rejects the candidate with the message, before a GPU is involved.
TEST(StaticGate, RejectsATensorMapBadForOneProblemNamingIt) {
  SdpaLike s;
  s.map().box[0] = "D";  // 64 halves = 128 bytes fit the swizzle; 128 halves do not
  Problem wide = s.problem;
  wide.name = "d128";
  wide.sizes["D"] = 128;
  s.profile.problems.push_back(wide);
  Build b;
  b.ok = true;
  b.ptxas.registers = 32;
  const StaticVerdict ok_for_first = static_gate(s.profile, {}, b, arch_limits("sm_90"));
  EXPECT_EQ(ok_for_first.outcome, Outcome::Rejected);
  EXPECT_NE(ok_for_first.reason.find("tensor_maps[0].box[0]"), std::string::npos) << ok_for_first.reason;
  EXPECT_NE(ok_for_first.reason.find("problem d128"), std::string::npos) << ok_for_first.reason;
  EXPECT_EQ(ok_for_first.reason.find("problem odd_s"), std::string::npos) << ok_for_first.reason;

  s.profile.problems.pop_back();
  EXPECT_EQ(static_gate(s.profile, {}, b, arch_limits("sm_90")).outcome, Outcome::Passed);
}

TEST(TmaCopy, ProfileLoadsAndBothSwizzlesCompileForHopperWithoutAGpu) {
  const Profile p = load_profile(kSource / "tests/data/profiles/tma_copy.json");
  ASSERT_EQ(p.tensor_maps.size(), 2u);
  EXPECT_EQ(p.tensor_maps[0].swizzle_bytes, 0);
  EXPECT_EQ(p.tensor_maps[1].swizzle_bytes, 128);
  test::TempDir t;
  CompileCache cache(t.path / "cache");
  for (std::int64_t swizzle : {0, 128}) {
    const Config c{{"SWIZZLE", swizzle}};
    const Build b = compile(candidate_request(p, c), cache);
    ASSERT_TRUE(b.ok) << "SWIZZLE=" << swizzle << ": " << b.log;
    EXPECT_EQ(static_gate(p, c, b, arch_limits(p.arch)).outcome, Outcome::Passed) << "SWIZZLE=" << swizzle;
  }
  EXPECT_TRUE(compile(reference_request(p), cache).ok);
}

// ---- on the GPU ----

// Y = X through each map: every element of X comes back, and the rows of the last box past ROWS
// are the map's zero fill (Y was poisoned with NaN before the launch).
TEST(GpuTensorMap, TmaCopyReturnsTheBufferAndZerosPastItsEnd) {
  if (const std::string why = test::no_cuda_device_reason(); !why.empty()) GTEST_SKIP() << why;
  const Profile p = load_profile(kSource / "tests/data/profiles/tma_copy.json");
  const DeviceInfo d = probe_device(0);
  if (d.cc != "sm_90") GTEST_SKIP() << "tma_copy is built for sm_90a; device 0 is " << d.name << " (" << d.cc << ")";
  test::TempDir t;
  CompileCache cache(t.path / "cache");
  for (const Problem& prob : p.problems) {
    for (std::int64_t swizzle : {0, 128}) {
      SCOPED_TRACE("problem " + prob.name + ", SWIZZLE=" + std::to_string(swizzle));
      const Config c{{"SWIZZLE", swizzle}};
      const Build b = compile(candidate_request(p, c), cache);
      ASSERT_TRUE(b.ok) << b.log;
      Module m = Module::load(b.cubin_path);
      Kernel k = m.kernel(b.lowered_name);
      BufferSet bufs(p, prob, c, nullptr);
      bufs.fill_inputs(0, 0, nullptr);
      bufs.poison_outputs(nullptr);
      PackedArgs args = bufs.pack(p.kernel);
      k.launch(launch_geometry(p.kernel, prob, c), args.get(), nullptr);
      EVO_CUDA(cudaDeviceSynchronize());

      const DeviceTensor y = bufs.device_outputs().at(0);
      std::vector<std::uint8_t> got(static_cast<std::size_t>(y.elements) * 2);
      EVO_CUDA(cudaMemcpy(got.data(), y.data, got.size(), cudaMemcpyDeviceToHost));
      const BufferSpec& x = *p.find_buffer("X");
      const std::int64_t n = buffer_elements(x, p.kernel, prob, c);
      std::vector<std::uint8_t> want = encode(DType::F16, draw_values(x.init, n, 0, 0, "X"), false, nullptr);
      want.resize(got.size(), 0);  // +0.0 halves past ROWS
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); i += 2)
        ASSERT_TRUE(got[i] == want[i] && got[i + 1] == want[i + 1])
            << "Y" << index_text(y.shape, static_cast<std::int64_t>(i / 2)) << " differs ("
            << (i / 2 < static_cast<std::size_t>(n) ? "a row of X" : "past ROWS: should be zero") << ")";
    }
  }
}

// BufferSet::pack keeps each map's encoded bytes while its layout and buffer hold: packing again
// gives them unchanged, and another configuration whose knobs move the box (sdpa_fp8's k_map is
// D x TILE_N x 1) gets them encoded afresh, equal to an encode of its own layout, then back again.
TEST(GpuTensorMap, PackReusesAMapOnlyWhileItsLayoutHolds) {
  if (const std::string why = test::no_cuda_device_reason(); !why.empty()) GTEST_SKIP() << why;
  const Profile p = load_profile(kSource / "profiles/sdpa_fp8.json");
  const Problem& prob = p.problems.front();
  Config narrow(p.baseline.begin(), p.baseline.end());
  narrow["TILE_N"] = 32;
  Config wide = narrow;
  wide["TILE_N"] = 64;
  const auto at = [&](const std::string& arg) {
    return static_cast<std::size_t>(std::find(p.kernel.args.begin(), p.kernel.args.end(), arg) - p.kernel.args.begin());
  };
  ASSERT_LT(at("k_map"), p.kernel.args.size());
  ASSERT_LT(at("K"), p.kernel.args.size());
  BufferSet bufs(p, prob, narrow, nullptr);
  const auto map_of = [&](const PackedArgs& a) {
    const unsigned char* b = a.slots[at("k_map")].bytes;
    return std::vector<unsigned char>(b, b + sizeof(ArgSlot::bytes));
  };
  const auto encoded = [&](const PackedArgs& a, const Config& c) {  // the driver's, over the same K
    void* k = nullptr;
    std::memcpy(&k, a.slots[at("K")].bytes, sizeof k);
    ArgSlot s{};
    encode_tensor_map(tensor_map_layout(*p.find_tensor_map("k_map"), p, prob, c), k, s.bytes);
    return std::vector<unsigned char>(s.bytes, s.bytes + sizeof s.bytes);
  };
  const PackedArgs first = bufs.pack(p.kernel);
  EXPECT_EQ(map_of(first), encoded(first, narrow));
  EXPECT_EQ(map_of(bufs.pack(p.kernel)), map_of(first)) << "packed again, the same configuration";
  bufs.configure(wide);
  const PackedArgs second = bufs.pack(p.kernel);
  EXPECT_EQ(map_of(second), encoded(second, wide)) << "TILE_N 64: its own box";
  EXPECT_NE(map_of(second), map_of(first)) << "a box of 64 rows encodes unlike one of 32";
  bufs.configure(narrow);
  const PackedArgs third = bufs.pack(p.kernel);
  EXPECT_EQ(map_of(third), map_of(first)) << "back to TILE_N 32";
}

}  // namespace
}  // namespace evo
