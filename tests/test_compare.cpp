// GREEN's comparison on the device (gates/compare.h) must give the host comparison's figures and
// name the same elements, for every dtype a profile can declare. The kernel's source is checked
// here without a GPU (it must compile for sm_90); the agreement needs one and skips without it.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/buffers.h"
#include "engine/device.h"
#include "gates/compare.h"
#include "tests/support.h"

namespace evo {
namespace {

HostTensor host_tensor(DType t, const std::vector<double>& v) {
  HostTensor h;
  h.name = "O";
  h.dtype = t;
  h.shape = {static_cast<std::int64_t>(v.size())};
  h.bytes = encode(t, v, false, nullptr);
  return h;
}

// The host tensor's bytes in device memory (kept alive by `keep`).
DeviceTensor on_device(const HostTensor& h, std::vector<DeviceBuffer>& keep) {
  keep.emplace_back(h.bytes.size());
  EVO_CUDA(cudaMemcpy(keep.back().get(), h.bytes.data(), h.bytes.size(), cudaMemcpyHostToDevice));
  DeviceTensor d;
  d.name = h.name;
  d.dtype = h.dtype;
  d.shape = h.shape;
  d.data = keep.back().get();
  d.elements = h.elements();
  return d;
}

void expect_same(const OutputCompare& host, const OutputCompare& dev, const std::string& what) {
  EXPECT_EQ(host.n, dev.n) << what;
  EXPECT_EQ(host.bad, dev.bad) << what;
  EXPECT_EQ(host.nan, dev.nan) << what;
  EXPECT_EQ(host.inf, dev.inf) << what;
  EXPECT_EQ(host.unwritten, dev.unwritten) << what;
  EXPECT_EQ(host.reference_bad, dev.reference_bad) << what;
  EXPECT_EQ(host.max_abs, dev.max_abs) << what;  // exact: both decode exactly, same |c - r|
  EXPECT_NEAR(host.mean_abs, dev.mean_abs, 1e-12 * (1 + std::fabs(host.mean_abs))) << what;
  EXPECT_NEAR(host.rel_l2, dev.rel_l2, 1e-12 * (1 + host.rel_l2)) << what;
  EXPECT_EQ(host.failure, dev.failure) << what;
}

TEST(GreenCompareKernel, CompilesForHopperWithoutAGpu) {
  const std::vector<char> cubin = compare_kernel_cubin("sm_90");
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(std::string(cubin.data() + 1, 3), "ELF");
}

TEST(GreenCompareOnDevice, AgreesWithTheHostForEveryDtypeAndFailure) {
  if (const std::string why = test::no_cuda_device_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::int64_t n = 3 * (std::int64_t(1) << 20) + 77;  // several blocks and a ragged end
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal(0, 1);
  std::vector<double> ref(static_cast<std::size_t>(n));
  for (auto& x : ref) x = normal(rng);
  GreenThresholds th;
  th.atol = th.rtol = 1e-2;
  th.max_bad_pct = 0;
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::FP8_E4M3, DType::FP8_E5M2}) {
    const HostTensor r = host_tensor(t, ref);
    std::vector<DeviceBuffer> keep;
    const DeviceTensor rd = on_device(r, keep);
    struct Case {
      std::string what;
      std::function<void(HostTensor&)> spoil;
    };
    const std::size_t w = dtype_bytes(t);
    auto put = [&](HostTensor& h, std::int64_t i, double v) {
      const auto e = encode(t, {v}, false, nullptr);
      std::copy(e.begin(), e.end(), h.bytes.begin() + i * w);
    };
    const std::vector<Case> cases = {
        {"identical", [](HostTensor&) {}},
        {"a few bad, a tie for the worst", [&](HostTensor& h) {
           put(h, 100, ref[100] + 4.0);
           put(h, 2'900'000, ref[2'900'000] + 8.0);
           put(h, 1'500'000, ref[1'500'000] + 8.0);
         }},
        {"max_abs over the limit only", [&](HostTensor& h) { put(h, 5, ref[5] + 0.5); }},
        {"unwritten", [&](HostTensor& h) { std::fill(h.bytes.begin() + 7 * w, h.bytes.begin() + 9 * w, poison_byte(t)); }},
        {"nan and inf", [&](HostTensor& h) {
           put(h, 3'000'000, std::nan(""));
           if (t != DType::FP8_E4M3) put(h, 200, INFINITY);  // e4m3 has no Inf (saturates)
         }},
    };
    for (const auto& c : cases) {
      GreenThresholds tc = th;
      if (c.what == "max_abs over the limit only") tc.max_bad_pct = 100, tc.max_abs = 0.25;
      HostTensor cand = r;
      c.spoil(cand);
      const std::string what = std::string(dtype_name(t)) + ": " + c.what;
      const OutputCompare host = compare_output(cand, r, tc);
      const OutputCompare dev = compare_output_on_device(on_device(cand, keep), rd, tc, nullptr);
      expect_same(host, dev, what);
      if (c.what == "identical") EXPECT_TRUE(dev.failure.empty()) << what << ": " << dev.failure;
      else EXPECT_FALSE(dev.failure.empty()) << what;
    }
    // A reference with a NaN cannot judge anything; both say where.
    HostTensor bad_ref = r;
    std::fill(bad_ref.bytes.begin() + 11 * w, bad_ref.bytes.begin() + 12 * w, poison_byte(t));
    const OutputCompare host = compare_output(r, bad_ref, th);
    const OutputCompare dev = compare_output_on_device(rd, on_device(bad_ref, keep), th, nullptr);
    expect_same(host, dev, std::string(dtype_name(t)) + ": unwritten reference");
    EXPECT_TRUE(dev.reference_bad);
  }
}


// The integer types and f64 a T1 file brings (uint8 signals, int16 counts, double sums): the device
// decodes each as the host does. A 1- or 2-byte integer has no poison (0x80 bytes are a value
// there), a 4- or 8-byte one keeps it.
TEST(GreenCompareOnDevice, AgreesWithTheHostForIntegerAndDoubleOutputs) {
  if (const std::string why = test::no_cuda_device_reason(); !why.empty()) GTEST_SKIP() << why;
  const std::int64_t n = (std::int64_t(1) << 20) + 33;
  std::mt19937_64 rng(11);
  for (DType t : {DType::U8, DType::I8, DType::U16, DType::I16, DType::U32, DType::I64, DType::U64, DType::F64}) {
    std::uniform_int_distribution<int> small(0, 100);
    std::normal_distribution<double> normal(0, 1e6);
    std::vector<double> ref(static_cast<std::size_t>(n));
    for (auto& x : ref) x = t == DType::F64 ? normal(rng) : small(rng);
    GreenThresholds th;
    th.atol = th.rtol = 0;
    th.max_bad_pct = 0;
    const HostTensor r = host_tensor(t, ref);
    std::vector<DeviceBuffer> keep;
    const DeviceTensor rd = on_device(r, keep);
    const std::size_t w = dtype_bytes(t);
    HostTensor bad = r, unwritten = r;
    const auto e = encode(t, {ref[4000] + 3}, false, nullptr);
    std::copy(e.begin(), e.end(), bad.bytes.begin() + 4000 * w);
    std::fill(unwritten.bytes.begin() + 9 * w, unwritten.bytes.begin() + 10 * w, poison_byte(t));
    for (const auto& [what, cand] : {std::pair<std::string, const HostTensor&>{"identical", r}, {"one off by 3", bad},
                                     {"poison bytes at [9]", unwritten}}) {
      const std::string tag = std::string(dtype_name(t)) + ": " + what;
      const OutputCompare host = compare_output(cand, r, th);
      const OutputCompare dev = compare_output_on_device(on_device(cand, keep), rd, th, nullptr);
      expect_same(host, dev, tag);
      if (what == "identical") {
        EXPECT_TRUE(dev.failure.empty()) << tag << ": " << dev.failure;
      } else {
        EXPECT_FALSE(dev.failure.empty()) << tag;
      }
      if (what == "poison bytes at [9]") {
        EXPECT_EQ(dev.unwritten, has_poison(t) ? 1 : 0) << tag;
      }
    }
  }
}

// A u8 output may hold 128 (0x80, the integer poison byte) as a value: it is compared as one, not
// taken for an element the kernel skipped; an i32 holding 0x80808080 is still reported unwritten.
TEST(GreenCompare, NarrowIntegersHaveNoPoisonWiderOnesKeepIt) {
  GreenThresholds exact;
  exact.atol = exact.rtol = 0;
  exact.max_bad_pct = 0;
  const HostTensor ref = host_tensor(DType::U8, {0, 128, 255, 7});
  EXPECT_TRUE(compare_output(ref, ref, exact).failure.empty());
  const HostTensor off = host_tensor(DType::U8, {0, 128, 254, 7});
  const OutputCompare o = compare_output(off, ref, exact);
  EXPECT_EQ(o.unwritten, 0);
  EXPECT_EQ(o.bad, 1);
  EXPECT_NE(o.failure.find("O[2] = 254, ref 255"), std::string::npos) << o.failure;
  HostTensor skipped = host_tensor(DType::I32, {1, 2, 3});
  std::fill(skipped.bytes.begin() + 4, skipped.bytes.begin() + 8, poison_byte(DType::I32));
  EXPECT_EQ(compare_output(skipped, host_tensor(DType::I32, {1, 2, 3}), exact).unwritten, 1);
  for (DType t : {DType::U8, DType::I8, DType::U16, DType::I16}) EXPECT_FALSE(has_poison(t)) << dtype_name(t);
  for (DType t : {DType::I32, DType::U32, DType::I64, DType::U64, DType::F64, DType::F32}) EXPECT_TRUE(has_poison(t)) << dtype_name(t);
}

// An integer buffer may allow a share of elements to differ (its own max_bad_pct, never the
// profile's), each element still compared exactly: 1 of 6 off passes at 20%, fails at 10%.
TEST(GreenCompare, IntegerBufferOwnBadShareIsTheOnlyTolerance) {
  GreenThresholds strict;
  BufferSpec pos;
  pos.name = "O";
  pos.dtype = DType::I32;
  pos.role = BufferRole::Output;
  const HostTensor ref = host_tensor(DType::I32, {0, 1, 1, 0, 5, -7});
  const HostTensor off = host_tensor(DType::I32, {0, 1, 1, 0, 6, -7});
  pos.green.max_bad_pct = 20.0;
  pos.green.atol = 5.0;  // ignored for integers even if set in code: the parser refuses it
  GreenThresholds t = green_thresholds(strict, pos);
  EXPECT_EQ(t.atol, 0.0);
  EXPECT_TRUE(compare_output(off, ref, t).failure.empty());
  pos.green.max_bad_pct = 10.0;
  t = green_thresholds(strict, pos);
  const OutputCompare o = compare_output(off, ref, t);
  EXPECT_EQ(o.bad, 1);
  EXPECT_FALSE(o.failure.empty());
}

// An integer buffer is compared exactly whatever the profile's tolerance: one count off by one
// fails, naming the element (green_thresholds gives i32 atol = rtol = 0).
TEST(GreenCompare, IntegerOutputsCompareExactly) {
  GreenThresholds loose;
  loose.atol = 10;
  loose.rtol = 1;
  loose.max_bad_pct = 50;
  BufferSpec pos;
  pos.name = "O";
  pos.dtype = DType::I32;
  pos.role = BufferRole::Output;
  const GreenThresholds t = green_thresholds(loose, pos);
  const HostTensor ref = host_tensor(DType::I32, {0, 1, 1, 0, 5, -7});
  const HostTensor same = host_tensor(DType::I32, {0, 1, 1, 0, 5, -7});
  const HostTensor off = host_tensor(DType::I32, {0, 1, 1, 0, 6, -7});
  EXPECT_TRUE(compare_output(same, ref, t).failure.empty());
  const OutputCompare o = compare_output(off, ref, t);
  EXPECT_EQ(o.bad, 1);
  EXPECT_NE(o.failure.find("O[4] = 6, ref 5"), std::string::npos) << o.failure;
  EXPECT_TRUE(compare_output(off, ref, loose).failure.empty());  // the float tolerance would let it pass

  // A float buffer's own thresholds override the profile's, one field at a time.
  BufferSpec h;
  h.dtype = DType::F32;
  h.green.atol = 0.5;
  const GreenThresholds ht = green_thresholds(loose, h);
  EXPECT_EQ(ht.atol, 0.5);
  EXPECT_EQ(ht.rtol, 1.0);
  EXPECT_EQ(ht.max_bad_pct, 50.0);
}

}  // namespace
}  // namespace evo
