#include "engine/device.h"

#include <cudaTypedefs.h>  // defines: PFN_cuTensorMapEncodeTiled_v12000, CUtensorMap enums (types only, no libcuda symbol)

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <fstream>
#include <mutex>
#include <iterator>

#include "engine/error.h"

namespace evo {
namespace {

std::string version_text(int v) {  // 13000 -> "13.0"
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string error_text(cudaError_t e) {
  return std::string(cudaGetErrorString(e)) + " (" + cudaGetErrorName(e) + ")";
}

std::atomic<std::int64_t> probed_memory_bytes{0};

}  // namespace

std::size_t kept_bytes_bound(std::size_t floor, double share) {
  const std::int64_t mem = probed_memory_bytes.load();
  return std::max(floor, static_cast<std::size_t>(mem > 0 ? static_cast<double>(mem) * share : 0.0));
}

DeviceInfo probe_device(int ordinal) {
  DeviceInfo d;
  d.ordinal = ordinal;
  int v = 0;
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) d.runtime = version_text(v);
  cudaError_t e = cudaGetDeviceCount(&d.device_count);
  if (e != cudaSuccess) {
    d.error = error_text(e);
    d.device_count = 0;
    cudaGetLastError();  // not sticky: clear it
    return d;
  }
  if (ordinal < 0 || ordinal >= d.device_count) {
    d.error = "device " + std::to_string(ordinal) + " not found (" + std::to_string(d.device_count) + " CUDA device" +
              (d.device_count == 1 ? "" : "s") + ")";
    return d;
  }
  cudaDeviceProp p{};
  if ((e = cudaGetDeviceProperties(&p, ordinal)) != cudaSuccess) {
    d.error = error_text(e);
    return d;
  }
  d.present = true;
  d.name = p.name;
  d.cc = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = p.l2CacheSize;
  d.smem_per_block_optin = static_cast<std::int64_t>(p.sharedMemPerBlockOptin);
  d.regs_per_sm = p.regsPerMultiprocessor;
  d.global_mem_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
  probed_memory_bytes = d.global_mem_bytes;
  if (cudaDriverGetVersion(&v) == cudaSuccess) d.driver = version_text(v);
  return d;
}

CudaError::CudaError(cudaError_t c, const std::string& where, bool s)
    : std::runtime_error(std::string(cudaGetErrorString(c)) + " (" + cudaGetErrorName(c) + ") in " + where),
      code(c),
      call(where),
      sticky(s) {}

bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorContextIsDestroyed:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

bool context_dead(cudaError_t e) {
  if (is_sticky(e)) return true;
  cudaGetLastError();  // clear a non-sticky error, then see whether the context still answers
  return cudaDeviceSynchronize() != cudaSuccess;
}

void check_cuda(cudaError_t e, const char* call) {
  if (e == cudaSuccess) return;
  bool sticky = context_dead(e);
  throw CudaError(e, call, sticky);
}

KernelAttrs Kernel::attrs() const {
  cudaFuncAttributes a{};
  EVO_CUDA(cudaFuncGetAttributes(&a, reinterpret_cast<const void*>(k_)));
  KernelAttrs r;
  r.registers = a.numRegs;
  r.max_threads_per_block = a.maxThreadsPerBlock;
  r.static_smem = static_cast<std::int64_t>(a.sharedSizeBytes);
  r.local_bytes = static_cast<std::int64_t>(a.localSizeBytes);
  r.const_bytes = static_cast<std::int64_t>(a.constSizeBytes);
  r.max_dynamic_smem = a.maxDynamicSharedSizeBytes;
  return r;
}

void Kernel::set_max_dynamic_smem(std::int64_t bytes) {
  EVO_CUDA(cudaFuncSetAttribute(reinterpret_cast<const void*>(k_), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(bytes)));
}

void Kernel::launch(const LaunchGeometry& g, void** args, cudaStream_t s) const {
  dim3 grid(g.grid[0], g.grid[1], g.grid[2]), block(g.block[0], g.block[1], g.block[2]);
  cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(k_), grid, block, args,
                                   static_cast<std::size_t>(g.shared_bytes), s);
  if (e != cudaSuccess) check_cuda(e, ("launch of " + name_).c_str());
}

Module Module::load(const std::string& cubin_path) {
  std::ifstream in(cubin_path, std::ios::binary);
  if (!in) throw UserError(cubin_path + ": cannot read cubin");
  std::vector<char> image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return load_image(image, cubin_path);
}

Module Module::load_image(const std::vector<char>& cubin, const std::string& label) {
  Module m;
  m.path_ = label;
  cudaError_t e = cudaLibraryLoadData(&m.lib_, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  if (e != cudaSuccess) check_cuda(e, ("cudaLibraryLoadData(" + label + ")").c_str());
  return m;
}

Module::~Module() {
  if (lib_) cudaLibraryUnload(lib_);
}
Module::Module(Module&& o) noexcept : lib_(o.lib_), path_(std::move(o.path_)) { o.lib_ = nullptr; }
Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (lib_) cudaLibraryUnload(lib_);
    lib_ = o.lib_;
    path_ = std::move(o.path_);
    o.lib_ = nullptr;
  }
  return *this;
}

Kernel Module::kernel(const std::string& lowered_name) const {
  cudaKernel_t k = nullptr;
  cudaError_t e = cudaLibraryGetKernel(&k, lib_, lowered_name.c_str());
  if (e != cudaSuccess) check_cuda(e, ("cudaLibraryGetKernel('" + lowered_name + "' in " + path_ + ")").c_str());
  return Kernel(k, lowered_name);
}

void* Module::global(const std::string& symbol, std::size_t* bytes) const {
  void* p = nullptr;
  std::size_t n = 0;
  cudaError_t e = cudaLibraryGetGlobal(&p, &n, lib_, symbol.c_str());
  if (e != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  if (bytes) *bytes = n;
  return p;
}

const Kernel& builtin_kernel(const std::string& entry,
                             const std::function<std::vector<char>(const std::string&)>& cubin) {
  struct Loaded {
    Module module;
    Kernel kernel;
  };
  static std::mutex mu;
  static auto* loaded = new std::map<std::string, Loaded>;  // never destroyed: modules go with the context
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded->find(entry);
  if (it == loaded->end()) {
    int dev = 0, major = 0, minor = 0;
    EVO_CUDA(cudaGetDevice(&dev));
    EVO_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    EVO_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
    Loaded l;
    l.module = Module::load_image(cubin("sm_" + std::to_string(major) + std::to_string(minor)), entry + " (built in)");
    l.kernel = l.module.kernel(entry);
    it = loaded->emplace(entry, std::move(l)).first;
  }
  return it->second.kernel;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : n_(bytes) {
  if (bytes) EVO_CUDA(cudaMalloc(&p_, bytes));
}
DeviceBuffer::~DeviceBuffer() { release(); }
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : p_(o.p_), n_(o.n_), reserved_(o.reserved_), handle_(o.handle_), reserved_bytes_(o.reserved_bytes_) {
  o.p_ = nullptr, o.n_ = 0, o.reserved_ = 0, o.handle_ = 0, o.reserved_bytes_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    release();
    p_ = o.p_, n_ = o.n_, reserved_ = o.reserved_, handle_ = o.handle_, reserved_bytes_ = o.reserved_bytes_;
    o.p_ = nullptr, o.n_ = 0, o.reserved_ = 0, o.handle_ = 0, o.reserved_bytes_ = 0;
  }
  return *this;
}

namespace {
// The driver's virtual memory calls (defined below, with driver_function).
struct VirtualMemory;
const VirtualMemory* virtual_memory();
bool map_moated(const VirtualMemory& vm, std::size_t bytes, unsigned long long* reserved, std::size_t* reserved_bytes,
                unsigned long long* handle, void** p, std::size_t* mapped);
void unmap_moated(const VirtualMemory& vm, unsigned long long reserved, std::size_t reserved_bytes,
                  unsigned long long handle, void* p, std::size_t mapped);
}  // namespace

DeviceBuffer DeviceBuffer::moated(std::size_t bytes) {
  DeviceBuffer b;
  const VirtualMemory* vm = bytes ? virtual_memory() : nullptr;
  if (vm && map_moated(*vm, bytes, &b.reserved_, &b.reserved_bytes_, &b.handle_, &b.p_, &b.n_)) return b;
  return DeviceBuffer(bytes);
}

void DeviceBuffer::release() noexcept {
  if (reserved_) {
    // Unmapped while a kernel may still use it would fault that kernel: wait for the device, as
    // cudaFree does (in a dead context this fails, and the calls below only give back what they can).
    cudaDeviceSynchronize();
    unmap_moated(*virtual_memory(), reserved_, reserved_bytes_, handle_, p_, n_);
  } else if (p_) {
    cudaFree(p_);
  }
  p_ = nullptr, n_ = 0, reserved_ = 0, handle_ = 0, reserved_bytes_ = 0;
}

namespace {

// A driver function by name, through the runtime: the driver is whatever libcuda the runtime
// loaded, so evo starts (and says "no CUDA device") where there is none.
template <class Fn>
Fn driver_function(const char* symbol) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
  // 12000: the newest ABI up to CUDA 12.0, the one cudaTypedefs.h's PFN_cuTensorMapEncodeTiled_v12000
  // and PFN_cuGetErrorName_v6000 describe (neither has changed since).
  const cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, &fn, 12000, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !fn) {
    cudaGetLastError();  // not sticky: clear it
    throw UserError(std::string("driver entry point ") + symbol + " not found" +
                    (e != cudaSuccess ? ": " + error_text(e) : std::string()));
  }
  return reinterpret_cast<Fn>(fn);
}

std::string cu_result_text(CUresult r) {
  const char* name = nullptr;
  try {
    static const auto get_name = driver_function<PFN_cuGetErrorName_v6000>("cuGetErrorName");
    if (get_name(r, &name) == CUDA_SUCCESS && name) return name;
  } catch (const UserError&) {
  }
  return "CUresult " + std::to_string(static_cast<int>(r));
}

struct VirtualMemory {
  PFN_cuMemGetAllocationGranularity_v10020 granularity;
  PFN_cuMemAddressReserve_v10020 reserve;
  PFN_cuMemAddressFree_v10020 free_address;
  PFN_cuMemCreate_v10020 create;
  PFN_cuMemRelease_v10020 release;
  PFN_cuMemMap_v10020 map;
  PFN_cuMemUnmap_v10020 unmap;
  PFN_cuMemSetAccess_v10020 set_access;
};
// Null where the driver lacks them (then buffers are not moated).
const VirtualMemory* virtual_memory() {
  static const VirtualMemory* vm = []() -> const VirtualMemory* {
    try {
      static VirtualMemory v{
          driver_function<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity"),
          driver_function<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve"),
          driver_function<PFN_cuMemAddressFree_v10020>("cuMemAddressFree"),
          driver_function<PFN_cuMemCreate_v10020>("cuMemCreate"),
          driver_function<PFN_cuMemRelease_v10020>("cuMemRelease"),
          driver_function<PFN_cuMemMap_v10020>("cuMemMap"),
          driver_function<PFN_cuMemUnmap_v10020>("cuMemUnmap"),
          driver_function<PFN_cuMemSetAccess_v10020>("cuMemSetAccess")};
      return &v;
    } catch (const UserError&) {
      return nullptr;
    }
  }();
  return vm;
}

CUmemAllocationProp device_memory_prop(int device) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  return prop;
}

// false: not supported here (the caller falls back to cudaMalloc); throws CudaError when the
// device is out of memory, as cudaMalloc would.
bool map_moated(const VirtualMemory& vm, std::size_t bytes, unsigned long long* reserved, std::size_t* reserved_bytes,
                unsigned long long* handle, void** p, std::size_t* mapped) {
  int device = 0;
  EVO_CUDA(cudaGetDevice(&device));
  const CUmemAllocationProp prop = device_memory_prop(device);
  std::size_t gran = 0;
  if (vm.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || gran == 0) return false;
  const std::size_t size = (bytes + gran - 1) / gran * gran;
  const std::size_t moat = (DeviceBuffer::kMoatBytes + gran - 1) / gran * gran;
  CUdeviceptr base = 0;
  if (vm.reserve(&base, moat + size + moat, gran, 0, 0) != CUDA_SUCCESS) return false;
  CUmemGenericAllocationHandle h = 0;
  const CUresult made = vm.create(&h, size, &prop, 0);
  if (made != CUDA_SUCCESS) {
    vm.free_address(base, moat + size + moat);
    if (made == CUDA_ERROR_OUT_OF_MEMORY) throw CudaError(cudaErrorMemoryAllocation, "cuMemCreate", false);
    return false;
  }
  const CUdeviceptr at = base + moat;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (vm.map(at, size, 0, h, 0) != CUDA_SUCCESS) {
    vm.release(h);
    vm.free_address(base, moat + size + moat);
    return false;
  }
  if (vm.set_access(at, size, &access, 1) != CUDA_SUCCESS) {
    vm.unmap(at, size);
    vm.release(h);
    vm.free_address(base, moat + size + moat);
    return false;
  }
  *reserved = base, *reserved_bytes = moat + size + moat, *handle = h;
  *p = reinterpret_cast<void*>(at), *mapped = size;
  return true;
}

void unmap_moated(const VirtualMemory& vm, unsigned long long reserved, std::size_t reserved_bytes,
                  unsigned long long handle, void* p, std::size_t mapped) {
  vm.unmap(reinterpret_cast<CUdeviceptr>(p), mapped);
  vm.release(handle);
  vm.free_address(reserved, reserved_bytes);
}

}  // namespace

void encode_tensor_map(const TensorMapLayout& L, const void* global_address, void* out128) {
  const std::string what = "tensor map " + L.name;
  if (reinterpret_cast<std::uintptr_t>(global_address) % 16 != 0)
    throw UserError(what + ": global address " + std::to_string(reinterpret_cast<std::uintptr_t>(global_address)) +
                    " is not 16-byte aligned");
  if (reinterpret_cast<std::uintptr_t>(out128) % 64 != 0) throw UserError(what + ": CUtensorMap storage is not 64-byte aligned");
  static_assert(sizeof(CUtensorMap) == 128, "a CUtensorMap is 128 bytes");
  static const auto encode = driver_function<PFN_cuTensorMapEncodeTiled_v12000>("cuTensorMapEncodeTiled");
  const std::array<cuuint32_t, 5> element_strides{1, 1, 1, 1, 1};
  const CUtensorMapSwizzle swizzle = L.swizzle_bytes == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                                     : L.swizzle_bytes == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                                     : L.swizzle_bytes == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                                             : CU_TENSOR_MAP_SWIZZLE_NONE;
  const CUtensorMapL2promotion l2 = L.l2_promotion_bytes == 256  ? CU_TENSOR_MAP_L2_PROMOTION_L2_256B
                                    : L.l2_promotion_bytes == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B
                                    : L.l2_promotion_bytes == 64  ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                                                                  : CU_TENSOR_MAP_L2_PROMOTION_NONE;
  const auto type = static_cast<CUtensorMapDataType>(tensor_map_data_type(L.dtype).value);
  const CUresult r = encode(static_cast<CUtensorMap*>(out128), type, static_cast<cuuint32_t>(L.rank),
                            const_cast<void*>(global_address), L.dims.data(), L.strides_bytes.data(), L.box.data(),
                            element_strides.data(), CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2,
                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) {
    std::string dims, box;
    for (int i = 0; i < L.rank; ++i) {
      dims += (i ? "," : "") + std::to_string(L.dims[i]);
      box += (i ? "," : "") + std::to_string(L.box[i]);
    }
    throw UserError("cuTensorMapEncodeTiled(" + what + ": " + dtype_name(L.dtype) + " dims {" + dims + "}, box {" + box +
                    "}, swizzle " + std::to_string(L.swizzle_bytes) + "): " + cu_result_text(r));
  }
}

}  // namespace evo
