// What a candidate kernel can reach, and the proof that it wrote only where it may.
//
// A kernel under test runs in the same context as the judge's own state: the inputs GREEN draws
// once and keeps on the device, the reference outputs it keeps, the other buffers. A store past
// the end of an output lands in whatever allocation follows it (cudaMalloc places allocations
// next to each other), silently, and from then on every candidate is compared on damaged data
// (docs/results/green-safety.md has the case that found it). So:
//   - every buffer a candidate is given sits between two guard zones (GuardedBuffer), filled
//     with kGuardByte; a byte of them changed is a write out of bounds, and where it landed says
//     which buffer and how far;
//   - every region the judge trusts (a device copy of an input fill, a reference output, the
//     candidate's own inputs between launches) has a checksum taken when it was made from
//     verified bytes; a region whose checksum moved was written by a candidate.
// One kernel checks a list of both (IntegrityCheck), its findings come back in one copy.
// region_checksum is the same function on the host and on the device, so a device copy can be
// proved equal to its host bytes without bringing it back.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/device.h"

namespace evo {

inline constexpr unsigned char kGuardByte = 0xA7;  // no float, half or int a kernel computes is made of it
// The guard zone on each side of a buffer of `bytes`: a quarter of it, at least 2 MiB (a tile row
// or a block row of a 4096-wide image past the end), at most 64 MiB, a multiple of 64 KiB (the
// buffer keeps cudaMalloc's alignment and more).
std::size_t guard_bytes(std::size_t bytes);

// Order-sensitive 64-bit checksum of a region: the sum over its 8-byte words (the last one
// zero-padded) of a mix of (word, index). Swapped, changed or zeroed words all move it.
std::uint64_t region_checksum(const void* data, std::size_t bytes);
// region_checksum of `bytes` bytes all equal to `byte`, without the bytes (a poisoned output's
// expected checksum); kept per (byte, bytes) for the process.
std::uint64_t repeated_byte_checksum(unsigned char byte, std::size_t bytes);

// A device buffer with a guard zone on each side, the zones filled with kGuardByte. The buffer
// starts where cudaMalloc would align it (the zone before is a multiple of 64 KiB); the zone after
// starts right at its end, whatever its size, and runs to the end of the mapping (at least
// guard() past it). Around both zones, an unmapped moat of DeviceBuffer::kMoatBytes: a store that
// misses the zones but lands within 1 GiB of the buffer faults.
class GuardedBuffer {
 public:
  GuardedBuffer() = default;
  // zones = false: exactly `bytes`, no zones (under compute-sanitizer, which must see a read one
  // element past the end). Throws CudaError.
  GuardedBuffer(std::size_t bytes, cudaStream_t s, bool zones = true);
  void* get() const { return bytes_ ? static_cast<unsigned char*>(block_.get()) + guard_ : nullptr; }
  std::size_t bytes() const { return bytes_; }
  std::size_t guard() const { return guard_; }
  std::size_t allocated() const { return block_.bytes(); }
  // Both zones back to kGuardByte (after a candidate changed them).
  void rearm(cudaStream_t s);

 private:
  DeviceBuffer block_;
  std::size_t bytes_ = 0, guard_ = 0;
};

// What one check found in one region.
struct RegionFinding {
  std::string label;        // "output O", "evo's input fill of Q (problem long, seed 0, trial 1)"
  bool guard = false;       // a guard zone (else a checksummed region)
  bool changed = false;
  // guard zones: the bytes that are no longer kGuardByte, the first and last as offsets from the
  // buffer (negative before its start, past `bytes` after its end)
  std::uint64_t bytes_changed = 0;
  std::int64_t first_offset = 0, last_offset = 0;
  std::size_t buffer_bytes = 0;
  std::string text() const;  // "output O: 1048576 bytes written past its end (up to +1048576)"
};

// A list of regions to check together: guard zones of buffers, and checksummed regions. Build it
// once (its work list goes to the device), run() it after each launch, then findings() after the
// stream is synchronised. Buffers must outlive it; rebuild it when the list changes.
class IntegrityCheck {
 public:
  IntegrityCheck() = default;
  void add_guards(const std::string& label, const GuardedBuffer& b);
  // Returns the region's index, for expect().
  std::size_t add_checksum(const std::string& label, const void* data, std::size_t bytes, std::uint64_t expected);
  // The checksum region `index` must have at the next run() (an input buffer refilled for a trial).
  void expect(std::size_t index, std::uint64_t checksum) { regions_.at(index).expected = checksum; }
  bool empty() const { return regions_.empty(); }
  std::size_t bytes_scanned() const;  // what one run() reads
  // Queues the check on `s` (a kernel and one device-to-host copy into pinned memory): no sync.
  void run(cudaStream_t s);
  // After `s` is synchronised: the regions that changed (empty when none did).
  std::vector<RegionFinding> findings() const;

 private:
  struct Region {
    std::string label;
    bool guard;
    const void* lo;            // guard: the buffer's allocation (zone, buffer, zone); checksum: the region
    std::size_t zone_bytes;    // guard: the zone before the buffer; checksum: the region's size
    std::size_t buffer_bytes;  // guard: the buffer between the zones
    std::size_t allocated;     // guard: the whole allocation
    std::uint64_t expected;
  };
  void upload(cudaStream_t s);
  std::vector<Region> regions_;
  bool uploaded_ = false;
  DeviceBuffer work_, results_;     // the chunk list; per region four words
  std::size_t chunks_ = 0;
  struct Pinned {                   // cudaMallocHost'd results, freed with the check
    void* p = nullptr;
    ~Pinned();
  };
  std::shared_ptr<Pinned> host_;
};

// The device's checksum of a region, now (a sync): to prove a device copy equals its host bytes.
std::uint64_t device_checksum(const void* data, std::size_t bytes, cudaStream_t s);

// A device copy the judge trusts across candidates (an input fill, a reference output), made from
// verified bytes and registered while it lives, so that check_trusted_copies sees it. A copy
// from the host is proved equal to its bytes on the device before anyone uses it (a restarted
// worker starts from state it has verified); a copy from the device takes its checksum there.
class TrustedCopy {
 public:
  // Throws CudaError, or UserError when the device copy does not hold the bytes just uploaded.
  // `checksum`: region_checksum of the host bytes, which the caller has computed already (a fill's
  // own; a second pass over them cost 1 ms for each 8 MB, 12 ms of gemm_fp16's first GREEN).
  static std::shared_ptr<TrustedCopy> from_host(std::string label, const void* host, std::size_t bytes,
                                                std::uint64_t checksum, cudaStream_t s);
  static std::shared_ptr<TrustedCopy> from_device(std::string label, const void* device, std::size_t bytes,
                                                  cudaStream_t s);
  // Scratch that evo only ever fills with zeros (FAST's L2-flush buffer): watched like a copy, so
  // a candidate's store that passed every guard zone and landed in it is found, not lost in
  // memory nobody reads (docs/results/green-safety.md). writable_zeros() is for evo's memsets.
  static std::shared_ptr<TrustedCopy> zeros(std::string label, std::size_t bytes, cudaStream_t s);
  void* writable_zeros() const;  // throws std::logic_error on a copy not made by zeros()
  bool zeroed_scratch() const { return zeros_; }
  ~TrustedCopy();
  TrustedCopy(const TrustedCopy&) = delete;
  TrustedCopy& operator=(const TrustedCopy&) = delete;
  const void* get() const { return buffer_.get(); }
  std::size_t bytes() const { return buffer_.bytes(); }
  std::uint64_t checksum() const { return checksum_; }
  const std::string& label() const { return label_; }

 private:
  TrustedCopy(std::string label, std::size_t bytes);
  std::string label_;
  DeviceBuffer buffer_;
  std::uint64_t checksum_ = 0;
  bool zeros_ = false;
};

// Every TrustedCopy alive in this process, checked in one kernel (a sync): those whose bytes no
// longer match their checksum. What a candidate wrote far outside its buffers lands here.
std::vector<RegionFinding> check_trusted_copies(cudaStream_t s);
// Every live copy made by TrustedCopy::zeros back to zeros (a sync): after a finding, so the
// scratch a candidate wrote into is as trusted again for the next one.
void restore_zeroed_copies(cudaStream_t s);
std::size_t trusted_bytes();  // what such a check reads

// The integrity kernels' cubin for `arch` ("sm_90"); needs NVRTC, not a GPU.
std::vector<char> guard_kernel_cubin(const std::string& arch);

}  // namespace evo
