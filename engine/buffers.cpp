#include "engine/buffers.h"

#include <cuda_bf16.h>  // defines: __float2bfloat16_rn, __bfloat162float (host)
#include <cuda_fp16.h>  // defines: __float2half_rn, __half2float (host)
#include <cuda_fp8.h>   // defines: __nv_cvt_float_to_fp8, __nv_cvt_fp8_to_halfraw (host)

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "engine/error.h"
#include "engine/expr.h"
#include "engine/files.h"        // defines: read_file
#include "engine/hash.h"         // defines: xxh64
#include "engine/launch.h"       // defines: tensor_map_layout
#include "engine/reference.h"    // defines: data_input_bytes
#include "engine/trial_store.h"  // defines: TrialStore, fill_key

namespace evo {
namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ULL;
  return h;
}

__nv_fp8_interpretation_t fp8_kind(DType t) { return t == DType::FP8_E4M3 ? __NV_E4M3 : __NV_E5M2; }

// Rounded to nearest (half away from zero) and held to the type's range, as a saturating
// conversion would (a uniform draw on [0, 256) into a u8 gives 0..255, never a wrapped 0); NaN
// stores 0.
template <typename T>
void store_int(double v, std::uint8_t* out) {
  T x = 0;
  if (!std::isnan(v)) {
    const double r = std::round(v);  // half away from zero, as i32 always was (llround)
    if (r <= static_cast<double>(std::numeric_limits<T>::lowest())) x = std::numeric_limits<T>::lowest();
    else if (r >= static_cast<double>(std::numeric_limits<T>::max())) x = std::numeric_limits<T>::max();
    else x = static_cast<T>(r);
  }
  std::memcpy(out, &x, sizeof x);
}

void store_one(DType t, double v, std::uint8_t* out) {
  switch (t) {
    case DType::F32: {
      float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      break;
    }
    case DType::F16: {
      __half_raw r = __float2half_rn(static_cast<float>(v));
      std::memcpy(out, &r.x, 2);
      break;
    }
    case DType::BF16: {
      __nv_bfloat16_raw r = __float2bfloat16_rn(static_cast<float>(v));
      std::memcpy(out, &r.x, 2);
      break;
    }
    case DType::FP8_E4M3:
    case DType::FP8_E5M2:
      *out = __nv_cvt_float_to_fp8(static_cast<float>(v), __NV_SATFINITE, fp8_kind(t));
      break;
    case DType::I32: store_int<std::int32_t>(v, out); break;
    case DType::U8: store_int<std::uint8_t>(v, out); break;
    case DType::I8: store_int<std::int8_t>(v, out); break;
    case DType::U16: store_int<std::uint16_t>(v, out); break;
    case DType::I16: store_int<std::int16_t>(v, out); break;
    case DType::U32: store_int<std::uint32_t>(v, out); break;
    case DType::I64: store_int<std::int64_t>(v, out); break;
    case DType::U64: store_int<std::uint64_t>(v, out); break;
    case DType::F64: std::memcpy(out, &v, 8); break;
  }
}

}  // namespace

std::vector<std::int64_t> buffer_shape(const BufferSpec& b, const KernelSpec& k, const Problem& p, const Config& c) {
  const Vars v = expression_vars(k, p, c);
  std::vector<std::int64_t> shape;
  for (const auto& e : b.shape) {
    double x = eval_expr(e, v);
    if (!std::isfinite(x) || x < 1 || x != std::floor(x))
      throw UserError("buffers." + b.name + ".shape: '" + e + "' = " + std::to_string(x) + " for problem " + p.name +
                      ": must be an integer >= 1");
    shape.push_back(static_cast<std::int64_t>(x));
  }
  return shape;
}

std::uint64_t fill_seed(std::uint64_t seed, int trial, const std::string& buffer) {
  return splitmix64(splitmix64(seed) ^ splitmix64(0x7431ULL + static_cast<std::uint64_t>(trial)) ^ fnv1a(buffer));
}

namespace {

// The threads GREEN's inputs are drawn with: EVO_DRAW_THREADS, else one a core.
std::size_t draw_threads() {
  if (const char* e = std::getenv("EVO_DRAW_THREADS")) {
    const long n = std::strtol(e, nullptr, 10);
    if (n >= 1) return static_cast<std::size_t>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

// Runs body(begin, end) over [0, n) in pieces of `grain`, on up to `most` threads (and 16) when
// there is enough work to be worth starting them. The first exception a piece throws is rethrown
// here once every thread has stopped; no further piece starts after it.
void in_parallel(std::size_t n, std::size_t grain, const std::function<void(std::size_t, std::size_t)>& body,
                 std::size_t most = 16) {
  const std::size_t pieces = (n + grain - 1) / grain;
  const std::size_t threads = std::min<std::size_t>({pieces, draw_threads(), most, 16});
  if (threads <= 1) {
    if (n) body(0, n);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr failed;
  std::mutex m;
  auto work = [&] {
    try {
      for (std::size_t i; (i = next.fetch_add(1)) < pieces;) body(i * grain, std::min(n, (i + 1) * grain));
    } catch (...) {
      std::lock_guard<std::mutex> g(m);
      if (!failed) failed = std::current_exception();
      next = pieces;
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (failed) std::rethrow_exception(failed);
}

}  // namespace

std::uint64_t draw_chunk_seed(std::uint64_t seed, int trial, const std::string& buffer, std::size_t chunk) {
  const std::uint64_t s = fill_seed(seed, trial, buffer);
  return chunk == 0 ? s : splitmix64(s ^ splitmix64(0x636875ULL + chunk));
}

std::vector<double> draw_values(const InitSpec& init, std::int64_t n, std::uint64_t seed, int trial,
                                const std::string& buffer) {
  std::vector<double> v(static_cast<std::size_t>(n));
  if (init.kind == InitSpec::Kind::Zeros || init.kind == InitSpec::Kind::Constant) {
    std::fill(v.begin(), v.end(), init.kind == InitSpec::Kind::Zeros ? 0.0 : init.a);
    return v;
  }
  // Each chunk of kDrawChunk values from its own generator, so that a large input (sdpa's `long`
  // problem draws 25 M values a trial, two seconds of one core) is drawn on every core at once;
  // what a chunk holds depends on (seed, trial, buffer, chunk) alone, never on the thread count.
  in_parallel(v.size(), kDrawChunk, [&](std::size_t from, std::size_t to) {
    std::mt19937_64 rng(draw_chunk_seed(seed, trial, buffer, from / kDrawChunk));
    if (init.kind == InitSpec::Kind::Normal) {
      std::normal_distribution<double> d(init.a, init.b);
      for (std::size_t i = from; i < to; ++i) v[i] = d(rng);
    } else {
      std::uniform_real_distribution<double> d(init.a, init.b);
      for (std::size_t i = from; i < to; ++i) v[i] = d(rng);
    }
  });
  return v;
}

double fp8_max_finite(DType t) { return t == DType::FP8_E4M3 ? 448.0 : 57344.0; }

std::vector<std::uint8_t> initial_bytes(const BufferSpec& b, std::int64_t n, std::uint64_t seed, int trial, float* descale) {
  if (b.init.kind != InitSpec::Kind::Raw)
    return encode(b.dtype, draw_values(b.init, n, seed, trial, b.name), !b.scale_arg.empty(), descale);
  if (descale) *descale = 1;
  std::optional<std::string> bytes = read_file(b.init.file);
  if (!bytes) throw UserError("buffers." + b.name + ".init.file: cannot read " + b.init.file.string());
  const std::size_t want = static_cast<std::size_t>(n) * dtype_bytes(b.dtype);
  if (bytes->size() != want)
    throw UserError("buffers." + b.name + ".init.file: " + b.init.file.string() + " holds " + std::to_string(bytes->size()) +
                    " bytes, the buffer needs " + std::to_string(n) + " " + dtype_name(b.dtype) + " (" +
                    std::to_string(want) + " bytes)");
  return std::vector<std::uint8_t>(bytes->begin(), bytes->end());
}

std::vector<std::uint8_t> encode(DType t, const std::vector<double>& values, bool scaled, float* descale) {
  const std::size_t w = dtype_bytes(t);
  std::vector<std::uint8_t> out(values.size() * w);
  double scale = 1.0;
  if (scaled && (t == DType::FP8_E4M3 || t == DType::FP8_E5M2)) {
    double amax = 0;
    for (double x : values) amax = std::max(amax, std::fabs(x));
    // Round the scale to f32 first: the kernel multiplies by the f32 descale it is given.
    if (amax > 0 && std::isfinite(amax)) scale = static_cast<float>(amax / fp8_max_finite(t));
  }
  if (descale) *descale = static_cast<float>(scale);
  in_parallel(values.size(), kDrawChunk, [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) store_one(t, values[i] / scale, out.data() + i * w);
  });
  return out;
}

namespace {
template <typename T>
double load_int(const std::uint8_t* p) {
  T x;
  std::memcpy(&x, p, sizeof x);
  return static_cast<double>(x);
}
}  // namespace

double decode_one(DType t, const std::uint8_t* p) {
  switch (t) {
    case DType::F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case DType::F16: {
      __half_raw r;
      std::memcpy(&r.x, p, 2);
      return __half2float(__half(r));
    }
    case DType::BF16: {
      __nv_bfloat16_raw r;
      std::memcpy(&r.x, p, 2);
      return __bfloat162float(__nv_bfloat16(r));
    }
    case DType::FP8_E4M3:
    case DType::FP8_E5M2: {
      __half_raw r = __nv_cvt_fp8_to_halfraw(*p, fp8_kind(t));
      return __half2float(__half(r));
    }
    case DType::I32: return load_int<std::int32_t>(p);
    case DType::U8: return load_int<std::uint8_t>(p);
    case DType::I8: return load_int<std::int8_t>(p);
    case DType::U16: return load_int<std::uint16_t>(p);
    case DType::I16: return load_int<std::int16_t>(p);
    case DType::U32: return load_int<std::uint32_t>(p);
    case DType::I64: return load_int<std::int64_t>(p);
    case DType::U64: return load_int<std::uint64_t>(p);
    case DType::F64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
  }
  return 0;
}

std::vector<double> decode(const HostTensor& t) {
  const std::size_t w = dtype_bytes(t.dtype);
  std::vector<double> v(t.bytes.size() / w);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = decode_one(t.dtype, t.bytes.data() + i * w);
  return v;
}

std::uint8_t poison_byte(DType t) { return is_integer(t) ? 0x80 : 0xFF; }

bool is_poison(DType t, const std::uint8_t* p) {
  if (!has_poison(t)) return false;
  const std::uint8_t b = poison_byte(t);
  for (std::size_t i = 0; i < dtype_bytes(t); ++i)
    if (p[i] != b) return false;
  return true;
}

std::string index_text(const std::vector<std::int64_t>& shape, std::int64_t flat) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] > 0 ? flat % shape[d] : 0;
    flat = shape[d] > 0 ? flat / shape[d] : 0;
  }
  std::string s = "[";
  for (std::size_t d = 0; d < idx.size(); ++d) s += (d ? "," : "") + std::to_string(idx[d]);
  return s + "]";
}

// ---- device side ----

const char* role_word(BufferRole r) {
  switch (r) {
    case BufferRole::Input: return "input";
    case BufferRole::Output: return "output";
    case BufferRole::Scratch: return "scratch";
    case BufferRole::InOut: return "inout";
  }
  return "buffer";
}

BufferSet::BufferSet(const Profile& profile, const Problem& p, const Config& c, cudaStream_t s, bool guard_zones)
    : profile_(profile), problem_(p), config_(c) {
  // A __constant__ symbol's buffer that a launch also takes as a pointer (Kernel Tuner passes its
  // constant-memory arguments both ways) has a device copy of the same data besides the symbol.
  auto passed = [&](const std::string& name) {
    std::vector<const KernelSpec*> all = profile.launches();
    for (const KernelSpec* k : profile.reference_launches()) all.push_back(k);
    for (const KernelSpec* k : all)
      if (std::find(k->args.begin(), k->args.end(), name) != k->args.end()) return true;
    return false;
  };
  for (const auto& b : profile.buffers) {
    Buf buf;
    buf.spec = b;
    buf.shape = buffer_shape(b, profile.kernel, p, c);
    buf.elements = 1;
    for (auto d : buf.shape) buf.elements *= d;
    // Exactly the bytes the shape says, between guard zones: a write past either end changes a
    // zone, and compute-sanitizer still catches a read one element past the end.
    if (b.symbol.empty() || passed(b.name)) {
      buf.dev = GuardedBuffer(static_cast<std::size_t>(buf.elements) * dtype_bytes(b.dtype), s, guard_zones);
      const std::string label = std::string(role_word(b.role)) + " " + b.name;
      writes_.add_guards(label, buf.dev);
      if (b.role == BufferRole::Input)  // its expected checksum is each fill's
        buf.checksum_region = writes_.add_checksum(label + " (written by the kernel)", buf.dev.get(), buf.dev.bytes(), 0);
    }
    bufs_.push_back(std::move(buf));
  }
  const Vars v = expression_vars(profile.kernel, p, c);
  for (const auto& sc : profile.scalars) scalars_[sc.name] = eval_expr(sc.value, v);
}

namespace {

// The worker evaluates candidate after candidate on the same (problem, seed, trial) inputs; drawing
// and encoding millions of values costs far more than the kernels (the sdpa `long` problem draws
// 25 M values per trial, about two seconds of one core), so each encoded fill is kept for the
// worker's lifetime, up to a bound, on the host and, once uploaded, in device memory too: a trial's
// inputs are then a device-to-device copy (microseconds) instead of a PCIe upload (milliseconds).
// A fill this worker has not made yet comes from the trial store when another worker of the host
// (or this one before a restart) stored it; one drawn here is stored for them.
struct EncodedFill {
  std::vector<std::uint8_t> bytes;
  float descale = 1;
  std::uint64_t digest = 0;               // XXH64 of bytes
  std::uint64_t checksum = 0;             // region_checksum of bytes: what a buffer filled from it holds
  std::string label;                      // "evo's fill of input Q (seed 0, trial 1)"
  std::shared_ptr<TrustedCopy> device;    // the same bytes on the device, once uploaded (and verified)
};
std::uint64_t fill_digest(const std::vector<std::uint8_t>& b) {
  return xxh64(std::string_view(reinterpret_cast<const char*>(b.data()), b.size()));
}

// Read from the store when another process stored it, else drawn and stored; touches nothing
// shared, so that several are made at once (FillMemo::prepare, store_fills_ahead).
std::shared_ptr<EncodedFill> make_fill(const std::string& key, const BufferSpec& spec, std::int64_t n,
                                       std::uint64_t seed, int trial, const TrialStore* store) {
  auto f = std::make_shared<EncodedFill>();
  f->label = "evo's fill of " + spec.name + " (seed " + std::to_string(seed) + ", trial " + std::to_string(trial) + ")";
  // A raw file is read where it is, as a data reference's input is: no copy of it in the store.
  if (spec.init.kind == InitSpec::Kind::Raw) store = nullptr;
  if (auto stored = store ? store->read_fill(key, spec.dtype, n) : std::nullopt) {
    f->bytes = std::move(stored->bytes);
    f->descale = stored->descale;
    f->digest = stored->digest;
  } else {
    f->bytes = initial_bytes(spec, n, seed, trial, &f->descale);
    f->digest = fill_digest(f->bytes);
    if (store) store->write_fill(key, spec.dtype, StoredFill{f->bytes, f->descale, f->digest});
  }
  f->checksum = region_checksum(f->bytes.data(), f->bytes.size());
  return f;
}

// Whether fill_inputs draws `b` anew for each (seed, trial): inputs and inouts, not a data
// reference's files (scratch is drawn once, from trial 0).
bool drawn_each_trial(const Profile& p, const BufferSpec& b) {
  if (b.role == BufferRole::Output || b.role == BufferRole::Scratch) return false;
  return !(p.reference_data && p.reference_data->inputs.count(b.name));
}

// One fill to make: buffer, elements, seed, trial.
struct WantedFill {
  const BufferSpec* spec;
  std::int64_t n;
  std::uint64_t seed;
  int trial;
};

// Every fill of `wanted` that `have` does not know, once each, made by make_fill (and returned in
// `wanted`'s order): the small ones several at once; the large ones (each drawn on up to 16
// threads already) as many at once as keeps every core busy and the values drawn within
// kLargeFillsBytes. One at a time, gemm_fp16's twelve fills of 4 M values kept five threads busy
// for 0.44 s of a 64-core host while every GPU waited for them. `stop`, when set, ends it before
// the next.
//
// With a store, each fill is drawn once on the host: a fill whose claim (TrialStore::try_claim)
// another process holds is waited for and read once the others are drawn. Without the claims the
// coordinator's draw ahead and each of a 4-GPU run's workers drew all of gemm_fp16's inputs at
// once, five times the work on the same cores, and the last workers' first GREEN waited 0.46 s
// (docs/results/scale12). `waiting` (when given) is called about once a second while waiting (a
// worker's heartbeat).
std::vector<std::pair<std::string, std::shared_ptr<EncodedFill>>> make_missing_fills(
    const std::vector<WantedFill>& wanted, const std::function<bool(const std::string&)>& have,
    const TrialStore* store, const std::atomic<bool>* stop = nullptr,
    const std::function<void()>& waiting = {}) {
  std::vector<std::pair<std::string, std::shared_ptr<EncodedFill>>> made;
  std::vector<const WantedFill*> todo;
  std::set<std::string> seen;
  for (const auto& w : wanted) {
    std::string key = fill_key(*w.spec, w.n, w.seed, w.trial);
    if (have(key) || !seen.insert(key).second) continue;
    made.emplace_back(std::move(key), nullptr);
    todo.push_back(&w);
  }
  // Claimed here, or held by another process: those are made last, each once its claim is had (by
  // then read from the store, or drawn where the holder died or could not store it).
  std::vector<std::optional<FileLock>> claims(todo.size());
  std::vector<std::size_t> others;
  const char* claims_env = std::getenv("EVO_FILL_CLAIMS");  // "0": every process draws what it lacks (to compare)
  const bool shared = store && !(claims_env && std::string(claims_env) == "0");
  for (std::size_t i = 0; shared && i < todo.size(); ++i) {
    if (todo[i]->spec->init.kind == InitSpec::Kind::Raw) continue;  // read where it is, never stored
    try {
      claims[i] = store->try_claim(made[i].first);
      if (!claims[i]) others.push_back(i);
    } catch (const UserError&) {  // no lock file here: drawn unshared, as before
    }
  }
  std::set<std::size_t> later(others.begin(), others.end());
  constexpr std::int64_t kAlone = 4 * static_cast<std::int64_t>(kDrawChunk);
  std::vector<std::size_t> small, large;
  for (std::size_t i = 0; i < todo.size(); ++i)
    if (!later.count(i)) (todo[i]->n > kAlone ? large : small).push_back(i);
  auto make = [&](std::size_t i) {
    if (stop && *stop) return;
    const WantedFill& w = *todo[i];
    made[i].second = make_fill(made[i].first, *w.spec, w.n, w.seed, w.trial, store);
    claims[i].reset();  // stored: whoever waits for it reads it now
  };
  in_parallel(small.size(), 1, [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to; ++k) make(small[k]);
  });
  // Per large fill in flight: its doubles, its encoded bytes, their copy in the store's file.
  constexpr std::int64_t kLargeFillsBytes = std::int64_t(1) << 30;
  const std::size_t cores = draw_threads();
  for (std::size_t at = 0; at < large.size();) {
    const WantedFill& w = *todo[large[at]];
    const std::size_t threads_each =
        std::min<std::size_t>(16, (static_cast<std::size_t>(w.n) + kDrawChunk - 1) / kDrawChunk);
    const std::int64_t bytes_each = w.n * static_cast<std::int64_t>(8 + 2 * dtype_bytes(w.spec->dtype));
    const std::size_t together = std::max<std::size_t>(
        1, std::min<std::size_t>(cores / threads_each, static_cast<std::size_t>(kLargeFillsBytes / bytes_each)));
    const std::size_t to = std::min(large.size(), at + together);
    in_parallel(to - at, 1, [&](std::size_t from, std::size_t end) {
      for (std::size_t k = from; k < end; ++k) make(large[at + k]);
    }, together);
    at = to;
  }
  // Another process's: each read (or drawn) once its claim is had, several at once.
  std::mutex beat;
  const std::function<void()> waited = [&] {
    std::lock_guard<std::mutex> g(beat);
    if (waiting) waiting();
  };
  in_parallel(others.size(), 1, [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to; ++k) {
      if (stop && *stop) return;
      const std::size_t i = others[k];
      claims[i] = store->claim(made[i].first, waited);
      make(i);
    }
  });
  return made;
}

class FillMemo {
 public:
  std::shared_ptr<EncodedFill> get(const BufferSpec& spec, std::int64_t n, std::uint64_t seed, int trial,
                                   const TrialStore* store) {
    const std::string key = fill_key(spec, n, seed, trial);
    if (auto it = fills_.find(key); it != fills_.end()) return it->second;
    return keep(key, make_fill(key, spec, n, seed, trial, store));
  }
  // Every fill of `wanted` the memo lacks, made on several threads, then kept in `wanted`'s order.
  void prepare(const std::vector<WantedFill>& wanted, const TrialStore* store, const std::function<void()>& waiting) {
    auto made = make_missing_fills(wanted, [&](const std::string& key) { return fills_.count(key) > 0; }, store,
                                   nullptr, waiting);
    for (auto& [key, f] : made) keep(key, std::move(f));
  }
  // Every device copy dropped (they are made again from the host bytes, verified): after a
  // candidate changed one, or might have.
  void forget_device_copies() {
    for (auto& [key, f] : fills_) f->device.reset();
  }
  // A data reference's fixed input: the file, whatever the seed and trial.
  std::shared_ptr<EncodedFill> get_file(const BufferSpec& spec, std::int64_t n, const std::filesystem::path& file) {
    const std::string key = "file|" + file.string() + "|" + spec.name + "|" + dtype_name(spec.dtype) + "|" +
                            std::to_string(n) + "|" + (spec.scale_arg.empty() ? "" : "scaled");
    if (auto it = fills_.find(key); it != fills_.end()) return it->second;
    auto f = std::make_shared<EncodedFill>();
    f->label = "evo's fill of " + spec.name + " (" + file.filename().string() + ")";
    f->bytes = data_input_bytes(spec, file, n, &f->descale);
    f->digest = fill_digest(f->bytes);
    f->checksum = region_checksum(f->bytes.data(), f->bytes.size());
    return keep(key, f);
  }

 private:
  std::shared_ptr<EncodedFill> keep(const std::string& key, std::shared_ptr<EncodedFill> f) {
    // Host and device copies count alike; callers hold shared_ptrs, so clearing frees nothing in use.
    if (bytes_ + 2 * f->bytes.size() > kept_bytes_bound(kFloor, 0.25)) fills_.clear(), bytes_ = 0;
    bytes_ += 2 * f->bytes.size();
    return fills_[key] = std::move(f);
  }
  static constexpr std::size_t kFloor = std::size_t(4) << 30;
  std::map<std::string, std::shared_ptr<EncodedFill>> fills_;
  std::size_t bytes_ = 0;
};
// Never destroyed: device memory goes with the worker's context (a static destructor calling
// cudaFree after the runtime shut down would fail).
FillMemo& fill_memo() {
  static FillMemo* memo = new FillMemo;
  return *memo;
}

}  // namespace

void forget_fill_copies() { fill_memo().forget_device_copies(); }

void BufferSet::fill_inputs(std::uint64_t seed, int trial, cudaStream_t s, const TrialStore* store) {
  idle_ = false;
  for (auto& b : bufs_) {
    if (b.spec.role == BufferRole::Output) continue;
    if (b.spec.role == BufferRole::Scratch && scratch_filled_) continue;
    const std::int64_t n = b.elements;
    // Scratch is drawn once per problem, from trial 0 of the first seed. A data reference's inputs
    // are its files (engine/reference.h).
    const DataReference* data = profile_.reference_data ? &*profile_.reference_data : nullptr;
    std::shared_ptr<EncodedFill> f =
        data && data->inputs.count(b.spec.name)
            ? fill_memo().get_file(b.spec, n, data->inputs.at(b.spec.name))
            : b.spec.role == BufferRole::Scratch
                ? fill_memo().get(b.spec, n, seed, 0, nullptr)  // sized by knobs, often: not worth a file each
                : fill_memo().get(b.spec, n, seed, trial, store);
    if (!b.spec.scale_arg.empty()) descales_[b.spec.scale_arg] = f->descale;
    b.digest = f->digest;
    if (!b.spec.symbol.empty()) {
      b.host = f->bytes;  // __constant__ symbols are uploaded per module, from the host
      if (!b.dev.get()) continue;  // not passed as an argument too: the symbol is all there is
    }
    // Uploaded once, proved equal to the host bytes on the device, then checked after every
    // candidate (check_trusted_copies): what every later candidate is filled from.
    if (!f->device) f->device = TrustedCopy::from_host(f->label, f->bytes.data(), f->bytes.size(), f->checksum, s);
    EVO_CUDA(cudaMemcpyAsync(b.dev.get(), f->device->get(), f->bytes.size(), cudaMemcpyDeviceToDevice, s));
    b.fill = f->device;
    if (b.checksum_region != ~std::size_t(0)) writes_.expect(b.checksum_region, f->checksum);
  }
  scratch_filled_ = true;
}

void BufferSet::prepare_fills(const std::vector<std::pair<std::uint64_t, int>>& trials, const TrialStore* store,
                              const std::function<void()>& waiting) {
  std::vector<WantedFill> wanted;
  for (const auto& b : bufs_)
    if (drawn_each_trial(profile_, b.spec))
      for (const auto& [seed, trial] : trials) wanted.push_back({&b.spec, b.elements, seed, trial});
  fill_memo().prepare(wanted, store, waiting);
}

void store_fills_ahead(const Profile& p, const Config& c, const TrialStore& store, const std::atomic<bool>* stop) {
  std::vector<WantedFill> wanted;
  for (const Problem& prob : p.problems) {
    // As green_trials (gates/green.h) with the run's own seeds and trials.
    const std::vector<std::uint64_t>& seeds = prob.green_seeds.empty() ? p.gates.green.seeds : prob.green_seeds;
    const int trials = prob.green_trials > 0 ? prob.green_trials : p.gates.green.trials;
    for (const BufferSpec& b : p.buffers) {
      if (!drawn_each_trial(p, b)) continue;
      std::int64_t n = 1;
      for (std::int64_t d : buffer_shape(b, p.kernel, prob, c)) n *= d;
      for (std::uint64_t seed : seeds)
        for (int t = 0; t < trials; ++t) wanted.push_back({&b, n, seed, t});
    }
  }
  // Written into the store by make_fill; nothing kept here.
  make_missing_fills(wanted, [&](const std::string& key) { return store.has_fill(key); }, &store, stop);
}

void BufferSet::configure(const Config& c) {
  config_ = c;
  uploaded_.clear();  // symbols of modules an earlier job loaded (and has unloaded since)
  const Vars v = expression_vars(profile_.kernel, problem_, c);
  for (const auto& sc : profile_.scalars) scalars_[sc.name] = eval_expr(sc.value, v);
  scratch_filled_ = false;
}

std::size_t BufferSet::device_bytes() const {
  std::size_t n = 0;
  for (const auto& b : bufs_) n += b.dev.allocated();
  return n;
}

std::string buffer_shapes_key(const Profile& p, const Problem& prob, const Config& c) {
  std::string k = p.path.string() + "|" + prob.name;
  for (const auto& b : p.buffers) {
    k += "|" + b.name + ":";
    for (auto d : buffer_shape(b, p.kernel, prob, c)) k += std::to_string(d) + ",";
  }
  return k;
}

BufferSetDemand buffer_set_demand(const Profile& p, const Problem& prob, const std::vector<Config>& configs) {
  BufferSetDemand d;
  std::set<std::string> keys, moved;
  std::map<std::string, std::vector<std::int64_t>> first_shape;
  for (const Config& c : configs) {
    const bool fresh_set = keys.insert(buffer_shapes_key(p, prob, c)).second;  // as GREEN keys its sets
    std::int64_t bytes = 0;
    for (const auto& b : p.buffers) {
      const auto shape = buffer_shape(b, p.kernel, prob, c);
      std::int64_t n = 1;
      for (auto x : shape) n *= x;
      bytes += n * static_cast<std::int64_t>(dtype_bytes(b.dtype));
      auto [it, fresh] = first_shape.emplace(b.name, shape);
      if (!fresh && it->second != shape) moved.insert(b.name);
    }
    if (fresh_set) d.largest_bytes = std::max(d.largest_bytes, bytes);
  }
  d.sets = keys.size();
  d.knob_sized.assign(moved.begin(), moved.end());
  return d;
}

std::vector<std::vector<std::size_t>> batches_by_buffers(const Profile& p, const Problem& prob,
                                                         const std::vector<std::optional<Config>>& configs,
                                                         std::size_t most) {
  most = std::max<std::size_t>(1, most);
  std::vector<std::vector<std::size_t>> batches;
  std::map<std::string, std::size_t> open;  // buffer shapes -> its batch still filling
  for (std::size_t i = 0; i < configs.size(); ++i) {
    if (!configs[i]) continue;
    const std::string shapes = buffer_shapes_key(p, prob, *configs[i]);
    auto it = open.find(shapes);
    if (it == open.end() || batches[it->second].size() >= most) {
      batches.push_back({});
      it = open.insert_or_assign(shapes, batches.size() - 1).first;
    }
    batches[it->second].push_back(i);
  }
  return batches;
}

void BufferSet::upload_symbols(const Module& m, bool required, cudaStream_t s) {
  for (const auto& b : bufs_) {
    if (b.spec.symbol.empty()) continue;
    std::size_t bytes = 0;
    void* dst = m.global(b.spec.symbol, &bytes);
    if (!dst) {
      if (required)
        throw UserError("buffers." + b.spec.name + ".symbol: __constant__ symbol '" + b.spec.symbol + "' not found in " +
                        m.path());
      continue;
    }
    if (bytes < b.host.size())
      throw UserError("buffers." + b.spec.name + ".symbol: '" + b.spec.symbol + "' holds " + std::to_string(bytes) +
                      " bytes, the buffer needs " + std::to_string(b.host.size()) + " for problem " + problem_.name);
    // From pageable memory: the runtime stages the bytes before this returns and copies them in
    // stream order (the runtime API's "API synchronization behavior"), so b.host may be refilled at once.
    EVO_CUDA(cudaMemcpyAsync(dst, b.host.data(), b.host.size(), cudaMemcpyHostToDevice, s));
    uploaded_.push_back(UploadedSymbol{"__constant__ " + b.spec.symbol + " of " + m.path(), dst, b.host, 0});
  }
}

void BufferSet::check_writes(cudaStream_t s) {
  writes_.run(s);
  // The symbols as the device holds them, into pinned memory (one copy each, no sync here).
  std::size_t need = 0;
  for (auto& u : uploaded_) u.at = need, need += u.bytes.size();
  if (need > readback_bytes_) {
    void* p = nullptr;
    EVO_CUDA(cudaMallocHost(&p, need));
    readback_.reset(p, [](void* q) { cudaFreeHost(q); });
    readback_bytes_ = need;
  }
  for (const auto& u : uploaded_)
    EVO_CUDA(cudaMemcpyAsync(static_cast<std::uint8_t*>(readback_.get()) + u.at, u.dst, u.bytes.size(),
                             cudaMemcpyDeviceToHost, s));
  checked_ = std::move(uploaded_);
  uploaded_.clear();
}

std::vector<RegionFinding> BufferSet::write_findings() const {
  std::vector<RegionFinding> out = writes_.findings();
  for (const auto& u : checked_)
    if (std::memcmp(static_cast<const std::uint8_t*>(readback_.get()) + u.at, u.bytes.data(), u.bytes.size()) != 0) {
      RegionFinding f;
      f.label = u.label;
      f.changed = true;
      out.push_back(std::move(f));
    }
  return out;
}

void BufferSet::rearm(cudaStream_t s) {
  for (auto& b : bufs_) b.dev.rearm(s);
}

void BufferSet::idle(cudaStream_t s) {
  poison_outputs(s);
  refill_inouts(true, s);
  if (!idle_built_) {
    for (auto& b : bufs_) {
      if (!b.dev.bytes() || !b.dev.guard()) continue;  // no zones: compute-sanitizer's run
      const std::string label = "problem " + problem_.name + "'s " + role_word(b.spec.role) + " " + b.spec.name +
                                ", kept between launches";
      idle_check_.add_guards(label, b.dev);
      // Scratch holds what the last kernel left (no expected bytes): its zones are watched only.
      if (b.spec.role != BufferRole::Scratch)
        b.idle_region = idle_check_.add_checksum(label, b.dev.get(), b.dev.bytes(), 0);
    }
    idle_built_ = true;
  }
  // What each buffer now holds is known without reading it: poison, or its last fill (an input
  // is checked against it after every launch, an inout was just refilled from it).
  for (auto& b : bufs_) {
    if (b.idle_region == ~std::size_t(0)) continue;
    std::uint64_t expected;
    if (b.spec.role == BufferRole::Output)
      expected = repeated_byte_checksum(poison_byte(b.spec.dtype), b.dev.bytes());
    else if (b.fill && b.fill->bytes() == b.dev.bytes())
      expected = b.fill->checksum();
    else
      expected = device_checksum(b.dev.get(), b.dev.bytes(), s);  // a sync: not the usual way
    idle_check_.expect(b.idle_region, expected);
  }
  idle_ = true;
}

void BufferSet::check_idle(cudaStream_t s) {
  if (!idle_ || idle_check_.empty()) return;
  idle_check_.run(s);
  idle_queued_ = true;
}

std::vector<RegionFinding> BufferSet::idle_findings() {
  if (!idle_queued_) return {};
  idle_queued_ = false;
  return idle_check_.findings();
}

void BufferSet::refill_inouts(bool all, cudaStream_t s) {
  idle_ = false;
  for (auto& b : bufs_) {
    if (b.spec.role != BufferRole::InOut || !b.fill) continue;
    if (!all && b.spec.refill != BufferSpec::Refill::EveryLaunch) continue;
    EVO_CUDA(cudaMemcpyAsync(b.dev.get(), b.fill->get(), b.dev.bytes(), cudaMemcpyDeviceToDevice, s));
  }
}

bool BufferSet::has_inouts() const {
  return std::any_of(bufs_.begin(), bufs_.end(), [](const Buf& b) { return b.spec.role == BufferRole::InOut; });
}

void BufferSet::poison_outputs(cudaStream_t s) {
  idle_ = false;
  for (auto& b : bufs_)
    if (b.spec.role == BufferRole::Output)
      EVO_CUDA(cudaMemsetAsync(b.dev.get(), poison_byte(b.spec.dtype), b.dev.bytes(), s));
}

PackedArgs BufferSet::pack(const KernelSpec& k) const {
  PackedArgs a;
  a.slots.resize(k.args.size(), ArgSlot{});
  a.ptrs.resize(k.args.size(), nullptr);
  for (std::size_t i = 0; i < k.args.size(); ++i) {
    const std::string& name = k.args[i];
    void* slot = a.slots[i].bytes;
    auto put_f32 = [&](double v) { float f = static_cast<float>(v); std::memcpy(slot, &f, 4); };
    auto put_i32 = [&](double v) { std::int32_t x = static_cast<std::int32_t>(std::llround(v)); std::memcpy(slot, &x, 4); };
    bool found = false;
    for (const auto& b : bufs_)
      if (b.spec.name == name) {
        void* p = b.dev.get();
        std::memcpy(slot, &p, sizeof p);
        found = true;
        break;
      }
    if (!found)
      for (const auto& sc : profile_.scalars)
        if (sc.name == name) {
          double v = scalars_.at(name);
          store_one(sc.dtype, v, static_cast<std::uint8_t*>(slot));
          found = true;
          break;
        }
    if (!found)
      for (const auto& b : bufs_)
        if (b.spec.scale_arg == name) {
          auto it = descales_.find(name);
          put_f32(it == descales_.end() ? 1.0 : it->second);
          found = true;
          break;
        }
    if (!found)
      if (const TensorMapSpec* m = profile_.find_tensor_map(name)) {
        for (const auto& b : bufs_)
          if (b.spec.name == m->buffer) {
            EncodedMap& e = encoded_maps_[name];
            if (!e.valid || e.config != config_ || e.address != b.dev.get()) {
              e.valid = false;  // until the encode below has succeeded
              e.bytes = ArgSlot{};  // as a fresh slot: bytes the driver leaves are zero
              encode_tensor_map(tensor_map_layout(*m, profile_, problem_, config_), b.dev.get(), e.bytes.bytes);
              e.config = config_, e.address = b.dev.get(), e.valid = true;
            }
            std::memcpy(slot, e.bytes.bytes, sizeof e.bytes.bytes);
          }
        found = true;
      }
    if (!found) {
      auto it = problem_.sizes.find(name);
      if (it == problem_.sizes.end())
        throw UserError("args: '" + name + "' is not a buffer, scalar, descale, tensor map or size");
      put_i32(it->second);
    }
    a.ptrs[i] = slot;
  }
  return a;
}

LaunchSequence::LaunchSequence(const std::vector<const KernelSpec*>& specs, const std::vector<Kernel>& kernels,
                               const Problem& p, const Config& c) {
  if (specs.size() != kernels.size())
    throw UserError(std::to_string(kernels.size()) + " kernels for " + std::to_string(specs.size()) + " launches");
  steps_.reserve(specs.size());
  std::map<std::string, std::int64_t> most;  // per kernel: the dynamic shared memory its launches ask
  for (std::size_t i = 0; i < specs.size(); ++i) {
    steps_.push_back(Step{specs[i], kernels[i], launch_geometry(*specs[i], p, c), {}});
    auto& m = most[kernels[i].name()];
    m = std::max(m, steps_.back().geometry.shared_bytes);
  }
  for (auto& [name, bytes] : most)
    if (bytes > 0)
      for (auto& s : steps_)
        if (s.kernel.name() == name) s.kernel.set_max_dynamic_smem(bytes);
}

void LaunchSequence::pack(const BufferSet& bufs) {
  for (auto& s : steps_) s.args = bufs.pack(*s.spec);
}

void LaunchSequence::launch(cudaStream_t stream) const {
  for (const auto& s : steps_) s.kernel.launch(s.geometry, const_cast<PackedArgs&>(s.args).get(), stream);
}

std::string BufferSet::inputs_digest() const {
  std::string d;
  for (const auto& b : bufs_)
    if (b.spec.filled_per_trial()) {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(b.digest));
      d += b.spec.name + "=" + hex + ";";
    }
  return d;
}

std::vector<DeviceTensor> BufferSet::device_outputs() const {
  std::vector<DeviceTensor> out;
  for (const auto& b : bufs_) {
    if (!b.spec.compared()) continue;
    DeviceTensor t;
    t.name = b.spec.name;
    t.dtype = b.spec.dtype;
    t.shape = b.shape;
    t.data = b.dev.get();
    t.elements = static_cast<std::int64_t>(b.dev.bytes() / dtype_bytes(b.spec.dtype));
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace evo
