#include "engine/guard.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "engine/compiler.h"  // defines: builtin_cubin
#include "engine/error.h"

namespace evo {
namespace {

constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
// One block's share of a region: small enough that a set of tens of MB keeps every SM busy.
constexpr std::size_t kChunkBytes = std::size_t(1) << 18;
// Offsets from a buffer's start travel as unsigned, shifted by this (a guard zone before the
// buffer gives negative ones).
constexpr std::uint64_t kOffsetBias = std::uint64_t(1) << 62;

std::uint64_t mix(std::uint64_t word, std::uint64_t index) {
  std::uint64_t x = word ^ (index * kGolden);
  x += kGolden;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The device side: the same mix, a guard scan and a checksum per chunk of a work list. Written
// without CUDA headers, as GREEN's comparison kernel is, so NVRTC builds it in tens of ms.
const char* const kSource = R"(
typedef unsigned long long u64;
struct Chunk {
  const unsigned char* p;  // the chunk's first byte (8-byte aligned)
  u64 len;                 // its bytes (a multiple of 8 for a guard zone)
  u64 first;               // guard: offset of p from the buffer's start + BIAS; checksum: index of its first word
  u64 skip_lo, skip_hi;    // guard: biased offsets [skip_lo, skip_hi) are the buffer's own bytes, not the zone's
  unsigned region, kind;   // kind 0: guard zone, 1: checksummed region
};
#define BIAS (1ULL << 62)
#define GUARD_WORD 0x%GUARD%%GUARD%%GUARD%%GUARD%%GUARD%%GUARD%%GUARD%%GUARD%ULL

__device__ u64 mix(u64 word, u64 index) {
  u64 x = word ^ (index * 0x9E3779B97F4A7C15ULL);
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// results: per region {bytes changed, first offset, last offset, checksum}.
extern "C" __global__ void __launch_bounds__(256) integrity_check(const Chunk* chunks, u64* results) {
  const Chunk c = chunks[blockIdx.x];
  u64 count = 0, lo = ~0ULL, hi = 0, sum = 0;
  const u64 words = c.len / 8;
  const u64* w = (const u64*)c.p;
  // Four independent loads in flight a thread before any is used: one load at a time left the
  // scan latency-bound, at about a tenth of what the memory gives.
  const u64 step = blockDim.x, wide = 4 * step;
  u64 i = threadIdx.x;
  if (c.kind == 0) {
    for (; i + 3 * step < words; i += wide) {
      const u64 v0 = w[i], v1 = w[i + step], v2 = w[i + 2 * step], v3 = w[i + 3 * step];
      if ((v0 & v1 & v2 & v3) == GUARD_WORD && (v0 | v1 | v2 | v3) == GUARD_WORD) continue;
      break;  // a word differs: the careful loop below finds which bytes, from here on
    }
    for (; i < words; i += step) {
      const u64 v = w[i];
      if (v == GUARD_WORD) continue;
      for (int b = 0; b < 8; ++b)
        if (((v >> (8 * b)) & 0xFF) != (GUARD_WORD & 0xFF)) {
          const u64 at = c.first + i * 8 + b;
          if (at >= c.skip_lo && at < c.skip_hi) continue;  // the buffer's last bytes share a word with the zone
          ++count;
          lo = at < lo ? at : lo;
          hi = at > hi ? at : hi;
        }
    }
  } else {
    for (; i + 3 * step < words; i += wide) {
      const u64 v0 = w[i], v1 = w[i + step], v2 = w[i + 2 * step], v3 = w[i + 3 * step];
      sum += mix(v0, c.first + i) + mix(v1, c.first + i + step) + mix(v2, c.first + i + 2 * step) +
             mix(v3, c.first + i + 3 * step);
    }
    for (; i < words; i += step) sum += mix(w[i], c.first + i);
    if (threadIdx.x == 0 && c.len % 8) {  // the region's last word, zero-padded
      u64 v = 0;
      for (u64 b = 0; b < c.len % 8; ++b) v |= (u64)c.p[words * 8 + b] << (8 * b);
      sum += mix(v, c.first + words);
    }
  }
  __shared__ u64 s_count[256], s_lo[256], s_hi[256], s_sum[256];
  s_count[threadIdx.x] = count, s_lo[threadIdx.x] = lo, s_hi[threadIdx.x] = hi, s_sum[threadIdx.x] = sum;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      s_count[threadIdx.x] += s_count[threadIdx.x + half];
      s_lo[threadIdx.x] = min(s_lo[threadIdx.x], s_lo[threadIdx.x + half]);
      s_hi[threadIdx.x] = max(s_hi[threadIdx.x], s_hi[threadIdx.x + half]);
      s_sum[threadIdx.x] += s_sum[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    u64* r = results + 4 * c.region;
    if (c.kind == 0) {
      if (s_count[0]) {
        atomicAdd(&r[0], s_count[0]);
        atomicMin(&r[1], s_lo[0]);
        atomicMax(&r[2], s_hi[0]);
      }
    } else {
      atomicAdd(&r[3], s_sum[0]);
    }
  }
}
)";

struct Chunk {  // the kernel's, byte for byte
  const unsigned char* p;
  std::uint64_t len;
  std::uint64_t first;
  std::uint64_t skip_lo = 0, skip_hi = 0;
  unsigned region, kind;
};
static_assert(sizeof(Chunk) == 48, "the chunk layout is shared with the kernel");

void launch_integrity_check(const void* chunks, std::size_t n, void* results, cudaStream_t s) {
  LaunchGeometry g;
  g.grid = {static_cast<std::uint32_t>(n), 1, 1};
  g.block = {256, 1, 1};
  void* args[] = {&chunks, &results};
  builtin_kernel("integrity_check", guard_kernel_cubin).launch(g, args, s);
}

// Splits [p, p + bytes) into chunks of at most kChunkBytes (multiples of 8 but the last).
void add_chunks(std::vector<Chunk>& out, const void* p, std::size_t bytes, unsigned region, unsigned kind,
                std::uint64_t first, bool words, std::uint64_t skip_lo = 0, std::uint64_t skip_hi = 0) {
  for (std::size_t off = 0; off < bytes; off += kChunkBytes) {
    Chunk c;
    c.p = static_cast<const unsigned char*>(p) + off;
    c.len = std::min(kChunkBytes, bytes - off);
    c.first = words ? first + off / 8 : first + off;
    c.skip_lo = skip_lo;
    c.skip_hi = skip_hi;
    c.region = region;
    c.kind = kind;
    out.push_back(c);
  }
}

std::size_t round_up8(std::size_t n) { return (n + 7) / 8 * 8; }

}  // namespace

std::size_t guard_bytes(std::size_t bytes) {
  const std::size_t unit = std::size_t(64) << 10;
  std::size_t g = std::clamp<std::size_t>(bytes / 4, std::size_t(2) << 20, std::size_t(64) << 20);
  return (g + unit - 1) / unit * unit;
}

std::uint64_t region_checksum(const void* data, std::size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  const std::size_t words = bytes / 8;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    sum += mix(w, i);
  }
  if (bytes % 8) {
    std::uint64_t v = 0;
    for (std::size_t b = 0; b < bytes % 8; ++b) v |= static_cast<std::uint64_t>(p[words * 8 + b]) << (8 * b);
    sum += mix(v, words);
  }
  return sum;
}

std::uint64_t repeated_byte_checksum(unsigned char byte, std::size_t bytes) {
  static std::mutex mu;
  static auto* kept = new std::map<std::pair<unsigned char, std::size_t>, std::uint64_t>;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = kept->find({byte, bytes}); it != kept->end()) return it->second;
  const std::uint64_t w = 0x0101010101010101ULL * byte;
  const std::size_t words = bytes / 8;
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < words; ++i) sum += mix(w, i);
  if (bytes % 8) sum += mix(w >> (8 * (8 - bytes % 8)), words);
  return (*kept)[{byte, bytes}] = sum;
}

std::vector<char> guard_kernel_cubin(const std::string& arch) {
  std::string src = kSource;
  char byte[3];
  std::snprintf(byte, sizeof byte, "%02X", kGuardByte);
  for (std::size_t at; (at = src.find("%GUARD%")) != std::string::npos;) src.replace(at, 7, byte);
  return builtin_cubin(src, "integrity_check.cu", arch, "GREEN's integrity kernel");
}

GuardedBuffer::GuardedBuffer(std::size_t bytes, cudaStream_t s, bool zones)
    : bytes_(bytes), guard_(zones ? guard_bytes(bytes) : 0) {
  if (!bytes) return;
  // With zones, a moated block: a store past the zones (up to DeviceBuffer::kMoatBytes) faults,
  // where it used to land in whatever allocation the driver had put there (a far store fooled
  // GREEN on H200s, docs/results/scale7 §2). The trailing zone runs to the mapping's end.
  block_ = zones ? DeviceBuffer::moated(guard_ + round_up8(bytes) + guard_) : DeviceBuffer(bytes);
  rearm(s);
}

void GuardedBuffer::rearm(cudaStream_t s) {
  if (!bytes_ || !guard_) return;
  unsigned char* base = static_cast<unsigned char*>(block_.get());
  EVO_CUDA(cudaMemsetAsync(base, kGuardByte, guard_, s));
  EVO_CUDA(cudaMemsetAsync(base + guard_ + bytes_, kGuardByte, block_.bytes() - guard_ - bytes_, s));
}

std::string RegionFinding::text() const {
  if (!guard) return label + ": written by the candidate (its checksum changed)";
  const bool before = first_offset < 0;
  const bool past = last_offset >= static_cast<std::int64_t>(buffer_bytes);
  std::string where;
  if (before) where = std::to_string(-first_offset) + " bytes before its start";
  if (past) {
    if (!where.empty()) where += " and ";
    where += "up to " + std::to_string(last_offset - static_cast<std::int64_t>(buffer_bytes) + 1) + " bytes past its end";
  }
  return label + ": " + std::to_string(bytes_changed) + " bytes written out of bounds (" + where + ")";
}

void IntegrityCheck::add_guards(const std::string& label, const GuardedBuffer& b) {
  if (!b.bytes() || !b.guard()) return;
  regions_.push_back(Region{label, true, static_cast<const unsigned char*>(b.get()) - b.guard(), b.guard(), b.bytes(),
                            b.allocated(), 0});
  uploaded_ = false;
}

std::size_t IntegrityCheck::add_checksum(const std::string& label, const void* data, std::size_t bytes,
                                         std::uint64_t expected) {
  regions_.push_back(Region{label, false, data, bytes, 0, 0, expected});
  uploaded_ = false;
  return regions_.size() - 1;
}

std::size_t IntegrityCheck::bytes_scanned() const {
  std::size_t n = 0;
  for (const auto& r : regions_) n += r.guard ? r.allocated - r.buffer_bytes : r.zone_bytes;
  return n;
}

IntegrityCheck::Pinned::~Pinned() {
  if (p) cudaFreeHost(p);
}

void IntegrityCheck::upload(cudaStream_t s) {
  std::vector<Chunk> chunks;
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const Region& r = regions_[i];
    const unsigned region = static_cast<unsigned>(i);
    if (r.guard) {
      // Before: the whole zone. After: from the buffer's last whole word (aligned: the buffer starts
      // on a 64 KiB boundary) to the allocation's end, the buffer's own last bytes skipped.
      const std::size_t tail = r.buffer_bytes / 8 * 8;
      const auto* base = static_cast<const unsigned char*>(r.lo);
      add_chunks(chunks, base, r.zone_bytes, region, 0, kOffsetBias - r.zone_bytes, false);
      add_chunks(chunks, base + r.zone_bytes + tail, r.allocated - r.zone_bytes - tail, region, 0, kOffsetBias + tail,
                 false, kOffsetBias, kOffsetBias + r.buffer_bytes);
    } else {
      add_chunks(chunks, r.lo, r.zone_bytes, region, 1, 0, true);
    }
  }
  chunks_ = chunks.size();
  work_ = DeviceBuffer(chunks.size() * sizeof(Chunk));
  EVO_CUDA(cudaMemcpyAsync(work_.get(), chunks.data(), chunks.size() * sizeof(Chunk), cudaMemcpyHostToDevice, s));
  results_ = DeviceBuffer(regions_.size() * 4 * sizeof(std::uint64_t));
  host_ = std::make_shared<Pinned>();
  EVO_CUDA(cudaMallocHost(&host_->p, regions_.size() * 4 * sizeof(std::uint64_t)));
  EVO_CUDA(cudaStreamSynchronize(s));  // `chunks` is pageable and goes out of scope
  uploaded_ = true;
}

void IntegrityCheck::run(cudaStream_t s) {
  if (regions_.empty()) return;
  if (!uploaded_) upload(s);
  // Per region: count 0, first ~0, last 0, checksum 0.
  std::vector<std::uint64_t> init(regions_.size() * 4, 0);
  for (std::size_t i = 0; i < regions_.size(); ++i) init[4 * i + 1] = std::numeric_limits<std::uint64_t>::max();
  std::memcpy(host_->p, init.data(), init.size() * sizeof(std::uint64_t));
  EVO_CUDA(cudaMemcpyAsync(results_.get(), host_->p, init.size() * sizeof(std::uint64_t), cudaMemcpyHostToDevice, s));
  if (chunks_) launch_integrity_check(work_.get(), chunks_, results_.get(), s);
  EVO_CUDA(cudaMemcpyAsync(host_->p, results_.get(), init.size() * sizeof(std::uint64_t), cudaMemcpyDeviceToHost, s));
}

std::vector<RegionFinding> IntegrityCheck::findings() const {
  std::vector<RegionFinding> out;
  if (!host_) return out;
  const auto* r = static_cast<const std::uint64_t*>(host_->p);
  for (std::size_t i = 0; i < regions_.size(); ++i) {
    const Region& g = regions_[i];
    RegionFinding f;
    f.label = g.label;
    f.guard = g.guard;
    f.buffer_bytes = g.buffer_bytes;
    if (g.guard) {
      f.bytes_changed = r[4 * i];
      f.changed = f.bytes_changed > 0;
      f.first_offset = static_cast<std::int64_t>(r[4 * i + 1] - kOffsetBias);
      f.last_offset = static_cast<std::int64_t>(r[4 * i + 2] - kOffsetBias);
    } else {
      f.changed = r[4 * i + 3] != g.expected;
    }
    if (f.changed) out.push_back(std::move(f));
  }
  return out;
}

std::uint64_t device_checksum(const void* data, std::size_t bytes, cudaStream_t s) {
  if (!bytes) return 0;
  std::vector<Chunk> chunks;
  add_chunks(chunks, data, bytes, 0, 1, 0, true);
  DeviceBuffer work(chunks.size() * sizeof(Chunk)), results(4 * sizeof(std::uint64_t));
  EVO_CUDA(cudaMemcpyAsync(work.get(), chunks.data(), chunks.size() * sizeof(Chunk), cudaMemcpyHostToDevice, s));
  EVO_CUDA(cudaMemsetAsync(results.get(), 0, 4 * sizeof(std::uint64_t), s));
  launch_integrity_check(work.get(), chunks.size(), results.get(), s);
  std::uint64_t r[4];
  EVO_CUDA(cudaMemcpyAsync(r, results.get(), sizeof r, cudaMemcpyDeviceToHost, s));
  EVO_CUDA(cudaStreamSynchronize(s));
  return r[3];
}

}  // namespace evo

namespace evo {
namespace {

// The live TrustedCopy objects and the check over them, rebuilt when the set changes.
struct TrustedRegistry {
  std::mutex mu;
  std::set<const TrustedCopy*> live;
  std::uint64_t version = 0, checked_version = ~0ULL;
  IntegrityCheck check;
  std::vector<const TrustedCopy*> order;  // check's regions
};
TrustedRegistry& registry() {
  static TrustedRegistry* r = new TrustedRegistry;  // never destroyed: copies may outlive statics
  return *r;
}

}  // namespace

TrustedCopy::TrustedCopy(std::string label, std::size_t bytes) : label_(std::move(label)), buffer_(bytes) {}

std::shared_ptr<TrustedCopy> TrustedCopy::from_host(std::string label, const void* host, std::size_t bytes,
                                                    std::uint64_t checksum, cudaStream_t s) {
  std::shared_ptr<TrustedCopy> c(new TrustedCopy(std::move(label), bytes));
  c->checksum_ = checksum;
  EVO_CUDA(cudaMemcpyAsync(c->buffer_.get(), host, bytes, cudaMemcpyHostToDevice, s));
  const std::uint64_t there = device_checksum(c->buffer_.get(), bytes, s);  // syncs: `host` may go after
  if (there != c->checksum_)
    throw UserError("the device copy of " + c->label_ + " does not hold the bytes uploaded to it");
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().live.insert(c.get());
  ++registry().version;
  return c;
}

std::shared_ptr<TrustedCopy> TrustedCopy::from_device(std::string label, const void* device, std::size_t bytes,
                                                      cudaStream_t s) {
  std::shared_ptr<TrustedCopy> c(new TrustedCopy(std::move(label), bytes));
  EVO_CUDA(cudaMemcpyAsync(c->buffer_.get(), device, bytes, cudaMemcpyDeviceToDevice, s));
  c->checksum_ = device_checksum(c->buffer_.get(), bytes, s);
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().live.insert(c.get());
  ++registry().version;
  return c;
}

std::shared_ptr<TrustedCopy> TrustedCopy::zeros(std::string label, std::size_t bytes, cudaStream_t s) {
  std::shared_ptr<TrustedCopy> c(new TrustedCopy(std::move(label), bytes));
  c->zeros_ = true;
  EVO_CUDA(cudaMemsetAsync(c->buffer_.get(), 0, bytes, s));
  c->checksum_ = device_checksum(c->buffer_.get(), bytes, s);
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().live.insert(c.get());
  ++registry().version;
  return c;
}

void* TrustedCopy::writable_zeros() const {
  if (!zeros_) throw std::logic_error(label_ + " is a trusted copy, not zeroed scratch: evo never writes it");
  return buffer_.get();
}

void restore_zeroed_copies(cudaStream_t s) {
  TrustedRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (const TrustedCopy* c : r.live)
    if (c->zeroed_scratch()) EVO_CUDA(cudaMemsetAsync(c->writable_zeros(), 0, c->bytes(), s));
  EVO_CUDA(cudaStreamSynchronize(s));
}

TrustedCopy::~TrustedCopy() {
  std::lock_guard<std::mutex> lock(registry().mu);
  registry().live.erase(this);
  ++registry().version;
}

std::vector<RegionFinding> check_trusted_copies(cudaStream_t s) {
  TrustedRegistry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.live.empty()) return {};
  if (r.checked_version != r.version) {
    r.check = IntegrityCheck();
    r.order.assign(r.live.begin(), r.live.end());
    for (const TrustedCopy* c : r.order) r.check.add_checksum(c->label(), c->get(), c->bytes(), c->checksum());
    r.checked_version = r.version;
  }
  r.check.run(s);
  EVO_CUDA(cudaStreamSynchronize(s));
  return r.check.findings();
}

std::size_t trusted_bytes() {
  std::lock_guard<std::mutex> lock(registry().mu);
  std::size_t n = 0;
  for (const TrustedCopy* c : registry().live) n += c->bytes();
  return n;
}

}  // namespace evo
