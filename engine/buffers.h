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

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/device.h"
#include "engine/guard.h"
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
// A trial's values for one buffer: chunk c of kDrawChunk values drawn by an mt19937_64 seeded with
// draw_chunk_seed(seed, trial, buffer, c) (chunk 0: fill_seed), the chunks on several threads.
constexpr std::size_t kDrawChunk = std::size_t(1) << 20;
std::uint64_t draw_chunk_seed(std::uint64_t seed, int trial, const std::string& buffer, std::size_t chunk);
std::vector<double> draw_values(const InitSpec& init, std::int64_t n, std::uint64_t seed, int trial,
                                const std::string& buffer);

// Every drawn input of every problem's GREEN trials (the profile's gates.green seeds and trials,
// or a problem's own), buffer shapes from `c`, written into `store` where it is not yet: what each
// GPU worker would otherwise draw for itself before its first candidate (0.5 s of many cores for
// sdpa_fp8). The coordinator calls it on a thread of its own while the workers start. Each fill is
// drawn once on the host: a worker that needs one the coordinator (or another worker) is drawing
// waits for it and reads it (its claim in the store, TrialStore::try_claim); one nobody draws it
// draws itself. Nothing is kept.
// `stop` (when given) set: returns before the next fill (the run ended, or found no device).
void store_fills_ahead(const Profile& p, const Config& c, const TrialStore& store,
                       const std::atomic<bool>* stop = nullptr);

double fp8_max_finite(DType t);  // 448 (e4m3), 57344 (e5m2)
// Values to the dtype's bytes. With `scaled` (fp8 only) each value is stored as x / scale with
// scale = amax / fp8_max_finite; `descale` receives scale (1 otherwise).
std::vector<std::uint8_t> encode(DType t, const std::vector<double>& values, bool scaled, float* descale);
// A buffer's bytes for one (seed, trial) from its init: drawn and encoded, or a raw file's bytes as
// they are (which must be exactly n elements of its dtype).
std::vector<std::uint8_t> initial_bytes(const BufferSpec& b, std::int64_t n, std::uint64_t seed, int trial, float* descale);
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

// Every buffer a kernel is given sits between guard zones (engine/guard.h): after a launch,
// check_writes() finds a write out of bounds (which buffer, how far) and a write into an input.
// The device copies of every fill this process keeps (TrustedCopy), dropped: each is uploaded and
// verified again when next needed. After a candidate wrote into one, or may have.
void forget_fill_copies();

// The shapes of every buffer of `p` for problem `prob` at configuration `c`: two configurations
// with the same key can share one BufferSet (only scratch buffers may depend on knobs).
std::string buffer_shapes_key(const Profile& p, const Problem& prob, const Config& c);
// What GREEN and FAST would keep for problem `prob` over `configs`: one set of device buffers per
// combination of buffer shapes (only knob-sized scratch makes more than one), the bytes of the
// largest set, and the scratch buffers whose shape moved with the knobs. `evo check` warns when the
// sets outgrow what a GPU keeps (docs/profiles.md, buffers: `shape`).
// What GREEN keeps of them across candidates (gates/green.cpp) is bound by this share of the
// probed device's memory, and never less than the floor (kept_bytes_bound, engine/device.h).
constexpr std::size_t kKeptBufferSetsFloor = std::size_t(8) << 30;  // device bytes, guard zones included
constexpr double kKeptBufferSetsShare = 0.125;
struct BufferSetDemand {
  std::size_t sets = 0;
  std::int64_t largest_bytes = 0;
  std::vector<std::string> knob_sized;
};
BufferSetDemand buffer_set_demand(const Profile& p, const Problem& prob, const std::vector<Config>& configs);

// Candidates one set of kept buffers serves together, for a metrics collection of several
// (gates/metrics.h, collect_metrics_batch): the indices of `configs` grouped by their buffer shapes
// on `prob`, at most `most` a group (at least 1), each group and the groups in the order given (a
// group is where its first member stands); absent entries are left out.
std::vector<std::vector<std::size_t>> batches_by_buffers(const Profile& p, const Problem& prob,
                                                         const std::vector<std::optional<Config>>& configs,
                                                         std::size_t most);

class BufferSet {
 public:
  // Allocates every buffer of `profile` for problem `p` and config `c` (scratch sized with c),
  // each between two guard zones armed on `s` (none with guard_zones false: under compute-sanitizer).
  BufferSet(const Profile& profile, const Problem& p, const Config& c, cudaStream_t s, bool guard_zones = true);

  // The same buffers for another configuration, kept across candidates (GREEN's): scalars and
  // tensor maps evaluated for `c`, scratch drawn again at the next fill_inputs. The buffers'
  // shapes must be `c`'s (buffer_shapes_key says when they are).
  void configure(const Config& c);
  std::size_t device_bytes() const;  // every buffer with its guard zones

  // Fresh inputs for (seed, trial) (a data reference's: its files, whatever the seed and trial);
  // scratch is filled on the first call after construction or configure(). A fill this process
  // has not made yet is read from `store` when another process stored it, else drawn (and
  // stored there). Queued on `s` (device-to-device copies from the fills' device copies).
  void fill_inputs(std::uint64_t seed, int trial, cudaStream_t s, const TrialStore* store = nullptr);
  // The host side of fill_inputs for every (seed, trial) of `trials` at once: each drawn input
  // the process does not hold yet is read from `store` or drawn, on every core together (most
  // inputs are one draw chunk, so one at a time left all cores but one idle: a second of the
  // first candidate's GREEN on sdpa_fp8). The later fill_inputs calls find them ready.
  // `waiting` is called about once a second while another process draws a fill this one needs.
  void prepare_fills(const std::vector<std::pair<std::uint64_t, int>>& trials, const TrialStore* store = nullptr,
                     const std::function<void()>& waiting = {});
  // Copies symbol buffers into `m`'s __constant__ symbols; a module lacking one throws UserError
  // if `required`, else that buffer is skipped (a reference, or a launch after the first, may not
  // need the table). Queued on `s`: a launch queued after it on `s` reads every byte
  // (docs/profiles.md "symbol"); the host bytes may change as soon as this returns.
  void upload_symbols(const Module& m, bool required, cudaStream_t s);
  // After launches: queues a check of every buffer's guard zones, every input buffer against its
  // fill, and every __constant__ symbol uploaded since the last check against its host bytes.
  // write_findings() reads the answers once `s` is synchronised: empty when nothing was written
  // where the kernel may not write. Then rearm() before the next launch when it was not empty.
  void check_writes(cudaStream_t s);
  std::vector<RegionFinding> write_findings() const;
  void rearm(cudaStream_t s);
  void poison_outputs(cudaStream_t s);
  // Between uses (another problem's launches, the next candidate's): outputs poisoned, inout
  // buffers back to their fill, and each buffer's expected checksum set from what it now holds
  // (poison, or its fill: no read of the device), so a store far outside another launch's buffers
  // that lands in this set is found by check_idle instead of being overwritten unseen by the next
  // fill (docs/results/green-safety.md). Scratch: its zones only. Any use (a fill, a poison, a
  // refill) ends the idle state. No-op checks on a set without guard zones.
  void idle(cudaStream_t s);
  bool is_idle() const { return idle_; }
  // Queues a check of every guard zone and every idle buffer's checksum (nothing when not idle);
  // idle_findings() reads it once `s` is synchronised.
  void check_idle(cudaStream_t s);
  std::vector<RegionFinding> idle_findings();
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
    std::int64_t elements = 0;
    GuardedBuffer dev;               // none for a __constant__ symbol's buffer
    std::vector<std::uint8_t> host;  // last fill (symbols are uploaded from here)
    std::shared_ptr<const TrustedCopy> fill;  // last fill on the device (inputs and inouts are copied from it)
    std::uint64_t digest = 0;        // XXH64 of the last fill
    std::size_t checksum_region = ~std::size_t(0);  // an input's region in writes_
    std::size_t idle_region = ~std::size_t(0);      // its bytes' region in idle_check_
  };
  struct UploadedSymbol {
    std::string label;  // "symbol weights of module <path>"
    void* dst;
    std::vector<std::uint8_t> bytes;
    std::size_t at;     // its place in readback_
  };
  const Profile& profile_;
  Problem problem_;
  Config config_;
  std::vector<Buf> bufs_;
  std::map<std::string, float> descales_;
  std::map<std::string, double> scalars_;  // evaluated scalar values
  // Each tensor map as last encoded (pack). Its bytes are a function of the profile and problem
  // (this set's, fixed), the configuration and the buffer's address: the last two are compared at
  // every pack, so a trial reuses the bytes and another configuration (a box or swizzle that
  // follows the knobs) encodes afresh. Encoding two maps every trial was 29 us of sdpa_fp8's
  // (docs/results/scale17).
  struct EncodedMap {
    bool valid = false;
    Config config;
    const void* address = nullptr;
    ArgSlot bytes{};
  };
  mutable std::map<std::string, EncodedMap> encoded_maps_;
  bool scratch_filled_ = false;
  IntegrityCheck writes_;                   // guard zones of every buffer, checksums of the inputs
  std::vector<UploadedSymbol> uploaded_;    // since the last check_writes
  std::shared_ptr<void> readback_;          // pinned: the uploaded symbols as the device holds them
  std::size_t readback_bytes_ = 0;
  std::vector<UploadedSymbol> checked_;     // what the last check_writes read back
  IntegrityCheck idle_check_;               // guard zones and every buffer's idle checksum
  bool idle_ = false, idle_built_ = false, idle_queued_ = false;
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
