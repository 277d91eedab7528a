// A profile's buffers for one problem and config: seeded host fills, dtype conversion (f16, bf16,
// fp8 e4m3/e5m2 with an optional per-tensor scale), NaN poison for outputs, __constant__ symbols,
// and the kernel argument list in the profile's `args` order (TMA tensor maps encoded by value).
//
// Inputs are drawn on the host from std::mt19937_64 seeded by (seed, trial, buffer name), so the
// candidate and the reference see the same data and a run is reproducible. Outputs are filled
// with a poison pattern (all bytes 0xFF: a NaN in every float format; 0x80808080 for i32) before
// every launch; an element still bit-equal to the poison was never written. An inout buffer is
// filled like an input and restored from that fill (refill_inouts), never poisoned.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/profile.h"
#include "engine/space.h"

namespace evo {

class TrialStore;  // engine/trial_store.h: fills shared on disk

// ---- host side (no GPU needed) ----

struct HostTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;
  std::int64_t elements() const { return static_cast<std::int64_t>(bytes.size() / dtype_bytes(dtype)); }
};

std::vector<std::int64_t> buffer_shape(const BufferSpec& b, const KernelSpec& k, const Problem& p, const Config& c);
std::uint64_t fill_seed(std::uint64_t seed, int trial, const std::string& buffer);
std::vector<double> draw_values(const InitSpec& init, std::int64_t n, std::uint64_t seed, int trial,
                                const std::string& buffer);

double fp8_max_finite(DType t);  // 448 (e4m3), 57344 (e5m2)
// Values to the dtype's bytes. With `scaled` (fp8 only) each value is stored as x / scale with
// scale = amax / fp8_max_finite; `descale` receives scale (1 otherwise).
std::vector<std::uint8_t> encode(DType t, const std::vector<double>& values, bool scaled, float* descale);
double decode_one(DType t, const std::uint8_t* element);
std::vector<double> decode(const HostTensor& t);

std::uint8_t poison_byte(DType t);                       // memset pattern of outputs
bool is_poison(DType t, const std::uint8_t* element);    // bit-exact poison: never written
std::string index_text(const std::vector<std::int64_t>& shape, std::int64_t flat);  // "[1,3,17,5]"

// ---- device side (in the worker) ----

// A buffer as it sits in device memory (GREEN compares outputs there).
struct DeviceTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  const void* data = nullptr;
  std::int64_t elements = 0;
};

// One argument's bytes, sized and aligned for the largest kind, a CUtensorMap (128 bytes, 64-byte
// aligned); a pointer or a scalar uses the first 8 or 4.
struct alignas(64) ArgSlot {
  unsigned char bytes[128];
};

// Kernel arguments: stable storage plus the void* array cudaLaunchKernel takes.
struct PackedArgs {
  std::vector<ArgSlot> slots;
  std::vector<void*> ptrs;
  void** get() { return ptrs.data(); }
};

class BufferSet {
 public:
  // Allocates every buffer of `profile` for problem `p` and config `c` (scratch sized with c).
  BufferSet(const Profile& profile, const Problem& p, const Config& c);

  // Fresh inputs for (seed, trial) (a data reference's: its files, whatever the seed and trial);
  // scratch is filled on the first call only. A fill this process has not made yet is read from
  // `store` when another process stored it, else drawn (and stored there).
  void fill_inputs(std::uint64_t seed, int trial, cudaStream_t s, const TrialStore* store = nullptr);
  // Copies symbol buffers into `m`'s __constant__ symbols; a module lacking one throws UserError
  // if `required`, else that buffer is skipped (a reference, or a launch after the first, may not
  // need the table).
  void upload_symbols(const Module& m, bool required, cudaStream_t s);
  void poison_outputs(cudaStream_t s);
  // Inout buffers back to their last fill (a device-to-device copy): before the candidate's
  // launch in GREEN (the reference accumulated into them), and before each FAST sample when the
  // buffer's refill is every_launch. `all`: every inout buffer, whatever its refill.
  void refill_inouts(bool all, cudaStream_t s);
  bool has_inouts() const;
  // The arguments `k` names, in its order. A tensor map is encoded here over this set's buffer,
  // for this problem and config; only the maps `k` names are evaluated.
  PackedArgs pack(const KernelSpec& k) const;
  std::vector<DeviceTensor> device_outputs() const;  // the output and inout buffers, in profile order

  // The XXH64 of every input and inout buffer's last fill, "name=digest;...": stored with outputs
  // computed from them, and compared by whoever reads those back.
  std::string inputs_digest() const;

  const Problem& problem() const { return problem_; }

 private:
  struct Buf {
    BufferSpec spec;
    std::vector<std::int64_t> shape;
    DeviceBuffer dev;
    std::vector<std::uint8_t> host;  // last fill (symbols are uploaded from here)
    std::shared_ptr<const DeviceBuffer> fill;  // last fill on the device (inout buffers refill from it)
    std::uint64_t digest = 0;        // XXH64 of the last fill
  };
  const Profile& profile_;
  Problem problem_;
  Config config_;
  std::vector<Buf> bufs_;
  std::map<std::string, float> descales_;
  std::map<std::string, double> scalars_;  // evaluated scalar values
  bool scratch_filled_ = false;
};

// A profile's launches for one problem and config (Profile::launches() with the candidate's
// kernels, or reference_launches() with the reference's and no config), run in order on one
// BufferSet as one unit: GREEN compares after the last, FAST times them all between its events.
class LaunchSequence {
 public:
  // Evaluates each launch's geometry and raises each kernel's dynamic shared-memory limit to the
  // most any of its launches asks (above 48 KB a kernel must opt in). Throws UserError when the
  // counts differ.
  LaunchSequence(const std::vector<const KernelSpec*>& specs, const std::vector<Kernel>& kernels, const Problem& p,
                 const Config& c);
  void pack(const BufferSet& bufs);    // every launch's arguments; again after a fill (descales change)
  void launch(cudaStream_t s) const;   // every launch, in order; throws CudaError naming the kernel
  std::size_t size() const { return steps_.size(); }
  const LaunchGeometry& geometry(std::size_t i) const { return steps_.at(i).geometry; }

 private:
  struct Step {
    const KernelSpec* spec;
    Kernel kernel;
    LaunchGeometry geometry;
    PackedArgs args;  // its pointers point into its own slots: moved, never copied
  };
  std::vector<Step> steps_;
};

}  // namespace evo
