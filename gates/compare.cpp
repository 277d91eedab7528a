#include "gates/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "engine/compiler.h"  // defines: builtin_cubin
#include "engine/device.h"
#include "engine/error.h"

namespace evo {
namespace {

// The figures of one run of elements. Host ranges and device threads both produce these; the
// merge takes minima of the "first" indices and the lowest index among equal worst errors, so
// the result does not depend on how the elements were split. Fourteen 8-byte fields, no padding:
// the device kernel writes the same layout (kPartSource below).
struct Part {
  std::int64_t first_unwritten = -1, first_nonfinite = -1, first_bad = -1, worst = -1, ref_first = -1;
  std::int64_t unwritten = 0, nan = 0, inf = 0, bad = 0, finite_pairs = 0;
  double max_abs = 0, sum_abs = 0, sum_d2 = 0, sum_r2 = 0;
};
static_assert(sizeof(Part) == 14 * 8, "Part is shared with the device kernel: 14 fields of 8 bytes");

std::string num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

std::int64_t min_index(std::int64_t a, std::int64_t b) { return a < 0 ? b : b < 0 ? a : std::min(a, b); }

// One element of either tensor: its value, or NaN when it is the poison pattern.
struct ElementReader {
  std::function<double(std::int64_t)> cand, ref;
  std::function<bool(std::int64_t)> cand_poison, ref_poison;
};

OutputCompare judge(const std::vector<Part>& parts, const std::string& name, const std::vector<std::int64_t>& shape,
                    std::int64_t n, const GreenThresholds& t, const ElementReader& at) {
  OutputCompare o;
  o.n = n;
  Part m;
  for (const Part& q : parts) {
    m.first_unwritten = min_index(m.first_unwritten, q.first_unwritten);
    m.first_nonfinite = min_index(m.first_nonfinite, q.first_nonfinite);
    m.first_bad = min_index(m.first_bad, q.first_bad);
    m.ref_first = min_index(m.ref_first, q.ref_first);
    if (q.worst >= 0 && (m.worst < 0 || q.max_abs > m.max_abs || (q.max_abs == m.max_abs && q.worst < m.worst)))
      m.max_abs = q.max_abs, m.worst = q.worst;
    m.unwritten += q.unwritten;
    m.nan += q.nan;
    m.inf += q.inf;
    m.bad += q.bad;
    m.finite_pairs += q.finite_pairs;
    m.sum_abs += q.sum_abs;
    m.sum_d2 += q.sum_d2;
    m.sum_r2 += q.sum_r2;
  }
  o.max_abs = m.max_abs;
  o.unwritten = m.unwritten;
  o.nan = m.nan;
  o.inf = m.inf;
  o.mean_abs = m.finite_pairs ? m.sum_abs / static_cast<double>(m.finite_pairs) : 0;
  o.rel_l2 = m.sum_r2 > 0 ? std::sqrt(m.sum_d2 / m.sum_r2) : std::sqrt(m.sum_d2);
  // Non-finite and unwritten elements count as bad too.
  o.bad = m.bad + o.nan + o.inf + o.unwritten;
  o.bad_pct = o.n ? 100.0 * static_cast<double>(o.bad) / static_cast<double>(o.n) : 0;

  auto where = [&](std::int64_t i) { return name + index_text(shape, i); };
  auto element = [&](std::int64_t i) {  // "O[1,3,17,5] = nan, ref 0.213"
    return where(i) + " = " + num(at.cand_poison(i) ? NAN : at.cand(i)) + ", ref " + num(at.ref(i));
  };
  if (m.ref_first >= 0) {
    o.reference_bad = true;
    o.failure = std::string("reference produced ") +
                (at.ref_poison(m.ref_first) ? "no value (unwritten)" : num(at.ref(m.ref_first))) + " at " + where(m.ref_first);
    return o;
  }
  char pct[64];
  std::snprintf(pct, sizeof pct, "%.3g%%", o.bad_pct);
  if (o.unwritten > 0) {
    o.failure = std::to_string(o.unwritten) + " of " + std::to_string(o.n) +
                " elements unwritten (poison survived), first " + where(m.first_unwritten);
  } else if (o.nan + o.inf > 0) {
    o.failure = std::to_string(o.nan) + " NaN, " + std::to_string(o.inf) + " Inf, first " + element(m.first_nonfinite);
  } else if (o.bad_pct > t.max_bad_pct) {
    const double r = at.ref(m.first_bad);
    o.failure = std::string(pct) + " bad (limit " + num(t.max_bad_pct) + "%), first " + element(m.first_bad) + " (|err| " +
                num(std::fabs(at.cand(m.first_bad) - r)) + " > " + num(t.atol + t.rtol * std::fabs(r)) + "); max_abs " +
                num(o.max_abs) + " at " + where(m.worst);
  } else if (o.max_abs > t.max_abs) {
    o.failure = "max_abs " + num(o.max_abs) + " > " + num(t.max_abs) + " at " + element(m.worst);
  } else if (o.mean_abs > t.mean_abs) {
    o.failure = "mean_abs " + num(o.mean_abs) + " > " + num(t.mean_abs) + " (max_abs " + num(o.max_abs) + " at " +
                element(m.worst) + ")";
  }
  return o;
}

// ---- the device kernel -------------------------------------------------------------------------

// Decoding is written out bit by bit (no CUDA headers: NVRTC compiles this in a few tens of ms)
// and is exact, like the host's decode_one: every format here widens exactly to double.
const char* const kPartSource = R"(
typedef long long i64;
struct Part {
  i64 first_unwritten, first_nonfinite, first_bad, worst, ref_first;
  i64 unwritten, nan, inf, bad, finite_pairs;
  double max_abs, sum_abs, sum_d2, sum_r2;
};
static_assert(sizeof(Part) == 14 * 8, "Part layout is shared with the host");

__device__ double half_bits(unsigned h) {  // IEEE binary16 -> double
  const double sign = (h & 0x8000u) ? -1.0 : 1.0;
  const int e = (h >> 10) & 31, m = h & 1023;
  if (e == 31) return m ? __longlong_as_double(0x7ff8000000000000LL) : sign * __longlong_as_double(0x7ff0000000000000LL);
  if (e == 0) return sign * ldexp((double)m, -24);
  return sign * ldexp((double)(1024 + m), e - 25);
}
__device__ double e4m3_bits(unsigned b) {  // OCP e4m3: no Inf, S.1111.111 is NaN
  const double sign = (b & 0x80u) ? -1.0 : 1.0;
  const int e = (b >> 3) & 15, m = b & 7;
  if (e == 15 && m == 7) return __longlong_as_double(0x7ff8000000000000LL);
  if (e == 0) return sign * ldexp((double)m, -9);
  return sign * ldexp((double)(8 + m), e - 10);
}
__device__ double decode(int dt, const unsigned char* p) {
  switch (dt) {
    case DT_F32: return (double)__int_as_float(*(const int*)p);
    case DT_F16: return half_bits(*(const unsigned short*)p);
    case DT_BF16: return (double)__int_as_float((int)((unsigned)(*(const unsigned short*)p) << 16));
    case DT_E4M3: return e4m3_bits(*p);
    case DT_E5M2: return half_bits((unsigned)(*p) << 8);  // e5m2 is the top byte of binary16
    case DT_U8: return (double)*p;
    case DT_I8: return (double)*(const signed char*)p;
    case DT_U16: return (double)*(const unsigned short*)p;
    case DT_I16: return (double)*(const short*)p;
    case DT_U32: return (double)*(const unsigned*)p;
    case DT_I64: return (double)*(const long long*)p;
    case DT_U64: return (double)*(const unsigned long long*)p;
    case DT_F64: return *(const double*)p;
    default: return (double)(*(const int*)p);             // i32
  }
}
__device__ bool is_int(int dt) { return dt == DT_I32 || (dt >= DT_U8 && dt <= DT_U64); }
// As the host's is_poison: a 1- or 2-byte integer has no pattern that is not a value.
__device__ bool poisoned(int dt, const unsigned char* p, int w) {
  if (is_int(dt) && w < 4) return false;
  const unsigned char b = is_int(dt) ? 0x80 : 0xFF;
  for (int i = 0; i < w; ++i)
    if (p[i] != b) return false;
  return true;
}
__device__ i64 first(i64 a, i64 b) { return a < 0 ? b : b < 0 ? a : (a < b ? a : b); }

// One Part per block over a grid-stride walk; thread parts are merged in a fixed tree order, so
// the sums are the same from run to run.
extern "C" __global__ void __launch_bounds__(256) green_compare(const unsigned char* cand, const unsigned char* ref,
    i64 n, int dt, int w, double atol, double rtol, Part* out) {
  Part q = {-1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0};
  const i64 stride = (i64)gridDim.x * blockDim.x;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const unsigned char* cp = cand + i * w;
    const unsigned char* rp = ref + i * w;
    const double r = decode(dt, rp);
    if (poisoned(dt, rp, w) || !isfinite(r)) { if (q.ref_first < 0) q.ref_first = i; continue; }
    if (poisoned(dt, cp, w)) { ++q.unwritten; if (q.first_unwritten < 0) q.first_unwritten = i; continue; }
    const double c = decode(dt, cp);
    if (!isfinite(c)) { if (isnan(c)) ++q.nan; else ++q.inf; if (q.first_nonfinite < 0) q.first_nonfinite = i; continue; }
    const double d = fabs(c - r);
    ++q.finite_pairs;
    q.sum_abs += d;
    q.sum_d2 += d * d;
    q.sum_r2 += r * r;
    if (d > q.max_abs || q.worst < 0) { q.max_abs = d; q.worst = i; }
    if (d > atol + rtol * fabs(r)) { ++q.bad; if (q.first_bad < 0) q.first_bad = i; }
  }
  __shared__ Part s[256];
  s[threadIdx.x] = q;
  __syncthreads();
  for (int half = 128; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      Part& a = s[threadIdx.x];
      const Part& b = s[threadIdx.x + half];
      a.first_unwritten = first(a.first_unwritten, b.first_unwritten);
      a.first_nonfinite = first(a.first_nonfinite, b.first_nonfinite);
      a.first_bad = first(a.first_bad, b.first_bad);
      a.ref_first = first(a.ref_first, b.ref_first);
      if (b.worst >= 0 && (a.worst < 0 || b.max_abs > a.max_abs || (b.max_abs == a.max_abs && b.worst < a.worst))) {
        a.max_abs = b.max_abs;
        a.worst = b.worst;
      }
      a.unwritten += b.unwritten; a.nan += b.nan; a.inf += b.inf; a.bad += b.bad;
      a.finite_pairs += b.finite_pairs;
      a.sum_abs += b.sum_abs; a.sum_d2 += b.sum_d2; a.sum_r2 += b.sum_r2;
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
)";

static_assert(static_cast<int>(DType::U64) - static_cast<int>(DType::U8) == 6 && static_cast<int>(DType::U8) == static_cast<int>(DType::I32) + 1,
              "the comparison kernel's is_int takes DT_I32 and DT_U8..DT_U64 as the integers");
std::string dtype_defines() {
  auto d = [](const char* name, DType t) { return "#define " + std::string(name) + " " + std::to_string(static_cast<int>(t)) + "\n"; };
  return d("DT_F32", DType::F32) + d("DT_F16", DType::F16) + d("DT_BF16", DType::BF16) + d("DT_E4M3", DType::FP8_E4M3) +
         d("DT_E5M2", DType::FP8_E5M2) + d("DT_I32", DType::I32) + d("DT_U8", DType::U8) + d("DT_I8", DType::I8) +
         d("DT_U16", DType::U16) + d("DT_I16", DType::I16) + d("DT_U32", DType::U32) + d("DT_I64", DType::I64) +
         d("DT_U64", DType::U64) + d("DT_F64", DType::F64);
}

}  // namespace

std::vector<char> compare_kernel_cubin(const std::string& arch) {
  return builtin_cubin(dtype_defines() + kPartSource, "green_compare.cu", arch, "GREEN's comparison kernel");
}

namespace {

double read_device_element(const DeviceTensor& t, std::int64_t i, bool* poison) {
  const std::size_t w = dtype_bytes(t.dtype);
  std::uint8_t e[8] = {};
  EVO_CUDA(cudaMemcpy(e, static_cast<const std::uint8_t*>(t.data) + static_cast<std::size_t>(i) * w, w, cudaMemcpyDeviceToHost));
  if (poison) *poison = is_poison(t.dtype, e);
  return decode_one(t.dtype, e);
}

}  // namespace

OutputCompare compare_output(const HostTensor& cand, const HostTensor& ref, const GreenThresholds& t) {
  const std::size_t w = dtype_bytes(cand.dtype);
  if (ref.elements() != cand.elements() || ref.dtype != cand.dtype) {
    OutputCompare o;
    o.n = cand.elements();
    o.reference_bad = true;
    o.failure = cand.name + ": candidate and reference outputs differ in size or dtype";
    return o;
  }
  const std::int64_t n = cand.elements();
  auto scan = [&](std::int64_t lo, std::int64_t hi) {
    Part q;
    for (std::int64_t i = lo; i < hi; ++i) {
      const std::uint8_t* cp = cand.bytes.data() + i * w;
      const std::uint8_t* rp = ref.bytes.data() + i * w;
      const double r = decode_one(ref.dtype, rp);
      if (is_poison(ref.dtype, rp) || !std::isfinite(r)) {
        if (q.ref_first < 0) q.ref_first = i;
        continue;
      }
      if (is_poison(cand.dtype, cp)) {
        ++q.unwritten;
        if (q.first_unwritten < 0) q.first_unwritten = i;
        continue;
      }
      const double c = decode_one(cand.dtype, cp);
      if (!std::isfinite(c)) {
        std::isnan(c) ? ++q.nan : ++q.inf;
        if (q.first_nonfinite < 0) q.first_nonfinite = i;
        continue;
      }
      const double d = std::fabs(c - r);
      ++q.finite_pairs;
      q.sum_abs += d;
      q.sum_d2 += d * d;
      q.sum_r2 += r * r;
      if (d > q.max_abs || q.worst < 0) q.max_abs = d, q.worst = i;
      if (d > t.atol + t.rtol * std::fabs(r)) {
        ++q.bad;
        if (q.first_bad < 0) q.first_bad = i;
      }
    }
    return q;
  };
  // Big outputs are split across the cores; the merge makes the split invisible.
  const std::int64_t kChunk = std::int64_t(1) << 20;
  const std::int64_t threads = std::clamp<std::int64_t>(n / kChunk, 1, std::max(1u, std::thread::hardware_concurrency()));
  std::vector<Part> parts(static_cast<std::size_t>(threads));
  if (threads == 1) {
    parts[0] = scan(0, n);
  } else {
    std::vector<std::thread> pool;
    for (std::int64_t k = 0; k < threads; ++k)
      pool.emplace_back([&, k] { parts[k] = scan(n * k / threads, n * (k + 1) / threads); });
    for (auto& th : pool) th.join();
  }
  ElementReader at;
  at.cand = [&](std::int64_t i) { return decode_one(cand.dtype, cand.bytes.data() + i * w); };
  at.ref = [&](std::int64_t i) { return decode_one(ref.dtype, ref.bytes.data() + i * w); };
  at.cand_poison = [&](std::int64_t i) { return is_poison(cand.dtype, cand.bytes.data() + i * w); };
  at.ref_poison = [&](std::int64_t i) { return is_poison(ref.dtype, ref.bytes.data() + i * w); };
  return judge(parts, cand.name, cand.shape, n, t, at);
}

namespace {

// The grid depends on n alone, so the split (and the sums' rounding) is the same every time.
int compare_blocks(std::int64_t n) {
  return static_cast<int>(std::clamp<std::int64_t>((n + 4 * 256 - 1) / (4 * 256), 1, 1024));
}

void launch_compare(const DeviceTensor& cand, const DeviceTensor& ref, const GreenThresholds& t, int blocks,
                    void* parts, cudaStream_t s) {
  const unsigned char* cp = static_cast<const unsigned char*>(cand.data);
  const unsigned char* rp = static_cast<const unsigned char*>(ref.data);
  long long nn = cand.elements;
  int dt = static_cast<int>(cand.dtype), w = static_cast<int>(dtype_bytes(cand.dtype));
  double atol = t.atol, rtol = t.rtol;
  void* args[] = {&cp, &rp, &nn, &dt, &w, &atol, &rtol, &parts};
  LaunchGeometry g;
  g.grid = {static_cast<std::uint32_t>(blocks), 1, 1};
  g.block = {256, 1, 1};
  builtin_kernel("green_compare", compare_kernel_cubin).launch(g, args, s);
}

OutputCompare judge_device(const std::vector<Part>& parts, const DeviceTensor& cand, const DeviceTensor& ref,
                           const GreenThresholds& t) {
  ElementReader at;
  at.cand = [&](std::int64_t i) { return read_device_element(cand, i, nullptr); };
  at.ref = [&](std::int64_t i) { return read_device_element(ref, i, nullptr); };
  at.cand_poison = [&](std::int64_t i) { bool p = false; read_device_element(cand, i, &p); return p; };
  at.ref_poison = [&](std::int64_t i) { bool p = false; read_device_element(ref, i, &p); return p; };
  return judge(parts, cand.name, cand.shape, cand.elements, t, at);
}

OutputCompare size_mismatch(const DeviceTensor& cand) {
  OutputCompare o;
  o.n = cand.elements;
  o.reference_bad = true;
  o.failure = cand.name + ": candidate and reference outputs differ in size or dtype";
  return o;
}

}  // namespace

void DeviceComparison::queue(const DeviceTensor& cand, const DeviceTensor& ref, const GreenThresholds& t,
                             cudaStream_t s) {
  cand_ = cand, ref_ = ref, t_ = t;
  mismatch_ = ref.elements != cand.elements || ref.dtype != cand.dtype;
  if (mismatch_) return;
  blocks_ = compare_blocks(cand.elements);
  if (blocks_ > capacity_) {
    void* d = nullptr;
    void* h = nullptr;
    EVO_CUDA(cudaMalloc(&d, static_cast<std::size_t>(blocks_) * sizeof(Part)));
    parts_dev_.reset(d, [](void* p) { cudaFree(p); });
    EVO_CUDA(cudaMallocHost(&h, static_cast<std::size_t>(blocks_) * sizeof(Part)));
    parts_host_.reset(h, [](void* p) { cudaFreeHost(p); });
    capacity_ = blocks_;
  }
  launch_compare(cand, ref, t, blocks_, parts_dev_.get(), s);
  EVO_CUDA(cudaMemcpyAsync(parts_host_.get(), parts_dev_.get(), static_cast<std::size_t>(blocks_) * sizeof(Part),
                           cudaMemcpyDeviceToHost, s));
}

OutputCompare DeviceComparison::result() const {
  if (mismatch_) return size_mismatch(cand_);
  const Part* p = static_cast<const Part*>(parts_host_.get());
  return judge_device(std::vector<Part>(p, p + blocks_), cand_, ref_, t_);
}

OutputCompare compare_output_on_device(const DeviceTensor& cand, const DeviceTensor& ref, const GreenThresholds& t,
                                       cudaStream_t s) {
  DeviceComparison c;
  c.queue(cand, ref, t, s);
  EVO_CUDA(cudaStreamSynchronize(s));
  return c.result();
}

}  // namespace evo
