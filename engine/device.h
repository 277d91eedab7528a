// CUDA runtime wrappers for the worker process: what the device is, a loaded cubin and its
// kernels, device buffers, and CUDA errors as values. Only the worker (and GPU tests) call these:
// the coordinator never initialises CUDA. evo links cudart statically and never libcuda, so on a
// machine without a driver probe_device says "no CUDA device" instead of failing to start.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/launch.h"

namespace evo {

struct DeviceInfo {
  bool present = false;
  int ordinal = 0;
  int device_count = 0;
  std::string error;             // why not present: cudaGetDeviceCount's text
  std::string name;              // "NVIDIA H100 80GB HBM3"
  std::string cc;                // "sm_90"
  int sm_count = 0;
  std::int64_t l2_bytes = 0;
  std::int64_t smem_per_block_optin = 0;
  int regs_per_sm = 0;
  std::int64_t global_mem_bytes = 0;
  std::string driver;            // "13.0" (cudaDriverGetVersion)
  std::string runtime;           // "13.0" (cudaRuntimeGetVersion)
};
DeviceInfo probe_device(int ordinal);  // never throws

// How many bytes a process-wide keep of device copies (GREEN's buffer sets, the input fills, the
// reference outputs) may hold: `share` of the memory of the device this process probed last, and
// never less than `floor`. A fixed bound below one candidate's working set evicts on every
// candidate: Kernel Tuner's reduction draws a 3.2 GB input, and under a 4 GB bound each candidate read
// it back from the trial store and uploaded it again, 20 s a candidate on an H200
// (docs/results/landscapes_h200). The callers' shares (an eighth each for buffer sets and reference
// outputs, a quarter for fills counted on host and device) leave a GPU's measuring and profiling
// workers together under three quarters of its memory.
std::size_t kept_bytes_bound(std::size_t floor, double share);

// A failed CUDA call. `sticky` means the context is dead (illegal address, launch failure …):
// every later call fails too, so the worker reports it and exits for a fresh context.
struct CudaError : std::runtime_error {
  CudaError(cudaError_t code, const std::string& call, bool sticky);
  cudaError_t code;
  std::string call;  // "cudaStreamSynchronize(s) after candidate launch (problem small, seed 0, trial 0)"
  bool sticky;
};
bool is_sticky(cudaError_t e);       // known context-killing codes
// Throws CudaError("<call>: <cudaGetErrorString> (<cudaGetErrorName>)") unless e == cudaSuccess.
void check_cuda(cudaError_t e, const char* call);
#define EVO_CUDA(call) ::evo::check_cuda((call), #call)

struct KernelAttrs {
  int registers = 0;
  int max_threads_per_block = 0;
  std::int64_t static_smem = 0, local_bytes = 0, const_bytes = 0;
  int max_dynamic_smem = 0;
};

// A kernel of a loaded library. Launch with the profile's geometry; args in `args` order.
class Kernel {
 public:
  Kernel() = default;
  Kernel(cudaKernel_t k, std::string name) : k_(k), name_(std::move(name)) {}
  const std::string& name() const { return name_; }
  KernelAttrs attrs() const;
  void set_max_dynamic_smem(std::int64_t bytes);  // needed above 48 KB
  void launch(const LaunchGeometry& g, void** args, cudaStream_t s) const;  // throws CudaError
  bool valid() const { return k_ != nullptr; }

 private:
  cudaKernel_t k_ = nullptr;
  std::string name_;
};

// A cubin loaded with cudaLibraryLoadData. Move-only; unloads on destruction.
class Module {
 public:
  static Module load(const std::string& cubin_path);  // throws CudaError, UserError (unreadable file)
  static Module load_image(const std::vector<char>& cubin, const std::string& label);  // label stands for the path
  Module() = default;
  ~Module();
  Module(Module&& o) noexcept;
  Module& operator=(Module&& o) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  Kernel kernel(const std::string& lowered_name) const;  // throws CudaError naming the kernel
  // A __global__/__constant__ symbol: device address and size; nullptr if the module has none.
  void* global(const std::string& symbol, std::size_t* bytes) const;
  const std::string& path() const { return path_; }

 private:
  cudaLibrary_t lib_ = nullptr;
  std::string path_;
};

// One of evo's own kernels (GREEN's comparison, the integrity check) for the current device: its
// cubin made by `cubin(arch)` ("sm_90") on the first call for `entry`, loaded once and kept for the
// process (the module goes with the context). Throws CudaError, or what `cubin` throws.
const Kernel& builtin_kernel(const std::string& entry, const std::function<std::vector<char>(const std::string&)>& cubin);

// Device memory, freed on destruction. Never managed memory.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  // At least `bytes` (bytes() says how many: rounded up to the mapping granularity, 2 MiB on
  // Hopper) with kMoatBytes of reserved, never mapped address space on either side: a store up to
  // that far before or past it faults instead of landing, unseen, in another allocation. Where the
  // device has no virtual memory management, plain cudaMalloc'd memory (has_moat() false).
  static DeviceBuffer moated(std::size_t bytes);
  static constexpr std::size_t kMoatBytes = std::size_t(1) << 30;
  bool has_moat() const { return reserved_ != 0; }
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return p_; }
  std::size_t bytes() const { return n_; }

 private:
  void release() noexcept;
  void* p_ = nullptr;
  std::size_t n_ = 0;
  // moated: the reservation (moat, mapping, moat) and the physical allocation mapped in its middle
  unsigned long long reserved_ = 0, handle_ = 0;
  std::size_t reserved_bytes_ = 0;
};

// Encodes a TMA tensor map (a CUtensorMap: 128 bytes at out128, which must be 64-byte aligned)
// over the device memory at global_address (16-byte aligned) with cuTensorMapEncodeTiled, reached
// through cudaGetDriverEntryPointByVersion (evo never links libcuda). Interleave none, element
// strides 1, out-of-bounds fill none (zeros). Throws UserError naming the map and the CUresult.
void encode_tensor_map(const TensorMapLayout& layout, const void* global_address, void* out128);

// After a failed step: is the context still usable? (a sticky code, or a sync that fails too)
bool context_dead(cudaError_t e);

// Announces a blocking step to the coordinator's watchdog: "green: candidate launch (problem
// small, seed 0, trial 1)", and how long it may take. A no-op outside the worker protocol.
using Heartbeat = std::function<void(const std::string& step, double budget_s)>;

}  // namespace evo
