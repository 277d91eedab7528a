// The trusted attention reference (templates/reference/sdpa_ref.cu) against a double-precision CPU
// attention on small shapes: fp16 and fp8 e4m3 inputs with descales, causal and not, HEAD_DIM 64
// and 128, S not a multiple of anything. GREEN trusts sdpa_ref, so sdpa_ref must earn it here.
// Needs a GPU: without one every test skips, saying why.
#include <cuda_fp16.h>  // defines: __half, __float2half_rn, __half2float (host side too)
#include <cuda_fp8.h>   // defines: __nv_fp8_e4m3 (host-side conversions)
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "engine/compiler.h"
#include "engine/device.h"
#include "engine/launch.h"
#include "tests/support.h"

namespace fs = std::filesystem;

namespace {

const fs::path kSource = evo::test::source_root();

struct Shape {
  int B, H, S, D;
  bool causal, fp8;
};
void PrintTo(const Shape& s, std::ostream* os) {  // (else gtest prints raw bytes)
  *os << "B=" << s.B << " H=" << s.H << " S=" << s.S << " D=" << s.D << (s.causal ? " causal" : "") << (s.fp8 ? " fp8" : " fp16");
}

// O = softmax(scale * Q·Kᵀ [causal]) · V in double over already dequantised inputs.
std::vector<double> cpu_attention(const Shape& s, const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, double scale) {
  std::vector<double> o(q.size(), 0.0), p(s.S);
  for (int bh = 0; bh < s.B * s.H; ++bh) {
    const std::size_t head = std::size_t(bh) * s.S * s.D;
    for (int i = 0; i < s.S; ++i) {
      const int n = s.causal ? i + 1 : s.S;
      double mx = -INFINITY;
      for (int j = 0; j < n; ++j) {
        double dot = 0;
        for (int d = 0; d < s.D; ++d) dot += q[head + std::size_t(i) * s.D + d] * k[head + std::size_t(j) * s.D + d];
        p[j] = dot * scale;
        mx = std::max(mx, p[j]);
      }
      double sum = 0;
      for (int j = 0; j < n; ++j) sum += (p[j] = std::exp(p[j] - mx));
      for (int d = 0; d < s.D; ++d) {
        double acc = 0;
        for (int j = 0; j < n; ++j) acc += p[j] * v[head + std::size_t(j) * s.D + d];
        o[head + std::size_t(i) * s.D + d] = acc / sum;
      }
    }
  }
  return o;
}

// Random N(0,1) values, quantised to the input type; `bytes` is what the kernel reads and `deq`
// the exact values it means (fp8: value * descale with descale = amax / 448, as evo quantises).
struct Tensor {
  std::vector<unsigned char> bytes;
  std::vector<double> deq;
  float descale = 1.f;
};

Tensor make_tensor(std::size_t n, bool fp8, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(n);
  for (auto& e : x) e = dist(rng);
  Tensor t;
  t.deq.resize(n);
  if (fp8) {
    float amax = 0.f;
    for (float e : x) amax = std::max(amax, std::fabs(e));
    t.descale = amax / 448.f;
    t.bytes.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const __nv_fp8_e4m3 q(x[i] / t.descale);
      std::memcpy(&t.bytes[i], &q, 1);
      t.deq[i] = double(static_cast<float>(q)) * t.descale;
    }
  } else {
    t.bytes.resize(2 * n);
    for (std::size_t i = 0; i < n; ++i) {
      const __half h = __float2half_rn(x[i]);
      std::memcpy(&t.bytes[2 * i], &h, 2);
      t.deq[i] = __half2float(h);
    }
  }
  return t;
}

// Runs sdpa_ref on one shape; returns the largest |gpu - cpu| - (atol + rtol |cpu|) (<= 0 passes).
double excess_error(const Shape& s) {
  evo::CompileCache cache(fs::temp_directory_path() / "evo_test_sdpa_ref_cache");
  evo::CompileRequest req;
  req.source_path = (kSource / "templates/reference/sdpa_ref.cu").string();
  req.name_expression = "sdpa_ref";
  req.defines = {{"HEAD_DIM", std::to_string(s.D)}, {"IN_FP8", s.fp8 ? "1" : "0"}};
  req.arch = evo::probe_device(0).cc;
  const evo::Build build = evo::compile(req, cache);
  EXPECT_TRUE(build.ok) << build.log;
  if (!build.ok) return INFINITY;
  evo::Module mod = evo::Module::load(build.cubin_path);
  evo::Kernel kern = mod.kernel(build.lowered_name);

  std::mt19937 rng(1234 + s.S + 7 * s.D + s.causal + 3 * s.fp8);
  const std::size_t n = std::size_t(s.B) * s.H * s.S * s.D;
  const Tensor q = make_tensor(n, s.fp8, rng), k = make_tensor(n, s.fp8, rng), v = make_tensor(n, s.fp8, rng);
  const float scale = 1.f / std::sqrt(float(s.D));

  evo::DeviceBuffer dq(q.bytes.size()), dk(k.bytes.size()), dv(v.bytes.size()), dout(2 * n);
  EVO_CUDA(cudaMemcpy(dq.get(), q.bytes.data(), q.bytes.size(), cudaMemcpyHostToDevice));
  EVO_CUDA(cudaMemcpy(dk.get(), k.bytes.data(), k.bytes.size(), cudaMemcpyHostToDevice));
  EVO_CUDA(cudaMemcpy(dv.get(), v.bytes.data(), v.bytes.size(), cudaMemcpyHostToDevice));
  EVO_CUDA(cudaMemset(dout.get(), 0xff, 2 * n));  // 0xffff is a NaN: an unwritten element fails

  void *pq = dq.get(), *pk = dk.get(), *pv = dv.get(), *po = dout.get();
  float qd = q.descale, kd = k.descale, vd = v.descale, sc = scale;
  int B = s.B, H = s.H, S = s.S, causal = s.causal;
  void* args[] = {&pq, &pk, &pv, &po, &qd, &kd, &vd, &sc, &B, &H, &S, &causal};
  evo::LaunchGeometry g;
  g.grid = {std::uint32_t(s.S), std::uint32_t(s.B * s.H), 1};
  g.block = {128, 1, 1};
  g.shared_bytes = std::int64_t(s.S) * 4;
  kern.launch(g, args, nullptr);
  EVO_CUDA(cudaDeviceSynchronize());

  std::vector<__half> out(n);
  EVO_CUDA(cudaMemcpy(out.data(), dout.get(), 2 * n, cudaMemcpyDeviceToHost));
  const std::vector<double> ref = cpu_attention(s, q.deq, k.deq, v.deq, scale);
  double worst = -INFINITY;
  for (std::size_t i = 0; i < n; ++i) {
    const double o = __half2float(out[i]);
    if (!std::isfinite(o)) return INFINITY;
    // fp32 arithmetic and an fp16 output: a half-ulp of fp16 (~5e-4 relative) dominates
    worst = std::max(worst, std::fabs(o - ref[i]) - (1e-3 + 2e-3 * std::fabs(ref[i])));
  }
  return worst;
}

class SdpaRef : public ::testing::TestWithParam<Shape> {};

TEST_P(SdpaRef, MatchesDoublePrecisionCpuAttention) {
  const std::string why = evo::test::no_cuda_device_reason();
  if (!why.empty()) GTEST_SKIP() << why;
  EXPECT_LE(excess_error(GetParam()), 0.0);
}

INSTANTIATE_TEST_SUITE_P(Shapes, SdpaRef,
                         ::testing::Values(Shape{1, 2, 64, 64, false, false},   // one full tile's worth
                                           Shape{2, 3, 37, 64, true, false},    // causal, odd S
                                           Shape{1, 2, 50, 64, false, true},    // fp8 with descales
                                           Shape{1, 2, 45, 64, true, true},     // fp8, causal
                                           Shape{1, 2, 33, 128, false, false},  // HEAD_DIM 128
                                           Shape{1, 1, 200, 128, true, true},   // more keys than threads
                                           Shape{1, 2, 3, 64, true, true},      // fewer keys than warps
                                           Shape{1, 1, 300, 64, false, false}), // odd keys for the two halves of P·V
                         [](const ::testing::TestParamInfo<Shape>& i) {
                           const Shape& s = i.param;
                           return std::string(s.fp8 ? "fp8" : "fp16") + "_S" + std::to_string(s.S) + "_D" +
                                  std::to_string(s.D) + (s.causal ? "_causal" : "");
                         });

}  // namespace
