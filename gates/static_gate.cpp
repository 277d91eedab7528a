#include "gates/static_gate.h"

#include <cuda_occupancy.h>

#include <algorithm>
#include <map>

#include "engine/error.h"
#include "engine/launch.h"

namespace evo {

ArchLimits arch_limits(const std::string& arch) {
  // The CUDA programming guide's compute-capability table: threads and shared memory per SM,
  // shared memory per block after opting in.
  struct Row {
    int threads_per_sm;
    std::int64_t smem_per_sm, smem_optin;
  };
  static const std::map<int, Row> table = {
      {75, {1024, 64 * 1024, 64 * 1024}},   {80, {2048, 164 * 1024, 163 * 1024}},
      {86, {1536, 100 * 1024, 99 * 1024}},  {87, {2048, 164 * 1024, 163 * 1024}},
      {88, {1536, 100 * 1024, 99 * 1024}},  {89, {1536, 100 * 1024, 99 * 1024}},
      {90, {2048, 228 * 1024, 227 * 1024}}, {100, {2048, 228 * 1024, 227 * 1024}},
      {103, {2048, 228 * 1024, 227 * 1024}}, {110, {2048, 228 * 1024, 227 * 1024}},
      {120, {1536, 100 * 1024, 99 * 1024}}, {121, {1536, 100 * 1024, 99 * 1024}}};
  std::string digits;
  for (char ch : arch) if (ch >= '0' && ch <= '9') digits += ch;
  int cc = digits.empty() ? 0 : std::stoi(digits);
  auto it = table.find(cc);
  if (it == table.end()) throw UserError("arch '" + arch + "': unknown target (known: sm_75 to sm_121)");
  ArchLimits l;
  l.arch = arch;
  l.cc_major = cc / 10;
  l.cc_minor = cc % 10;
  l.max_threads_per_sm = it->second.threads_per_sm;
  l.shared_per_sm = it->second.smem_per_sm;
  l.shared_per_block_optin = it->second.smem_optin;
  l.reserved_shared_per_block = cc >= 80 ? 1024 : 0;
  return l;
}

Occupancy predict_occupancy(const ArchLimits& limits, int registers_per_thread, int threads_per_block,
                            std::int64_t static_smem, std::int64_t dynamic_smem, int barriers) {
  cudaOccDeviceProp prop;
  prop.computeMajor = limits.cc_major;
  prop.computeMinor = limits.cc_minor;
  prop.maxThreadsPerBlock = limits.max_threads_per_block;
  prop.maxThreadsPerMultiprocessor = limits.max_threads_per_sm;
  prop.regsPerBlock = limits.registers_per_block;
  prop.regsPerMultiprocessor = limits.registers_per_sm;
  prop.warpSize = 32;
  prop.sharedMemPerBlock = static_cast<std::size_t>(limits.shared_per_block);
  prop.sharedMemPerMultiprocessor = static_cast<std::size_t>(limits.shared_per_sm);
  prop.numSms = 1;
  prop.sharedMemPerBlockOptin = static_cast<std::size_t>(limits.shared_per_block_optin);
  prop.reservedSharedMemPerBlock = static_cast<std::size_t>(limits.reserved_shared_per_block);
  cudaOccFuncAttributes attr;
  attr.maxThreadsPerBlock = limits.max_threads_per_block;
  attr.numRegs = registers_per_thread;
  attr.sharedSizeBytes = static_cast<std::size_t>(static_smem);
  attr.partitionedGCConfig = PARTITIONED_GC_OFF;
  attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN;  // the worker raises every kernel's dynamic limit
  attr.maxDynamicSharedSizeBytes = static_cast<std::size_t>(std::max<std::int64_t>(
      0, limits.shared_per_block_optin - static_smem));
  attr.numBlockBarriers = std::max(1, barriers);
  cudaOccDeviceState state;
  cudaOccResult r{};
  Occupancy o;
  const cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(&r, &prop, &attr, &state, threads_per_block,
                                                                   static_cast<std::size_t>(dynamic_smem));
  if (err != CUDA_OCC_SUCCESS) {
    o.limited_by = "inputs the occupancy calculator refuses (error " + std::to_string(static_cast<int>(err)) + ")";
    return o;
  }
  o.blocks_per_sm = r.activeBlocksPerMultiprocessor;
  o.registers_per_block = r.allocatedRegistersPerBlock;
  o.shared_per_block = static_cast<std::int64_t>(r.allocatedSharedMemPerBlock);
  const int warps = (threads_per_block + 31) / 32;
  o.occupancy_pct = 100.0 * o.blocks_per_sm * warps / (limits.max_threads_per_sm / 32);
  const struct {
    int bit;
    const char* name;
  } factors[] = {{OCC_LIMIT_REGISTERS, "registers"}, {OCC_LIMIT_SHARED_MEMORY, "shared memory"},
                 {OCC_LIMIT_WARPS, "warps"},         {OCC_LIMIT_BLOCKS, "blocks"},
                 {OCC_LIMIT_BARRIERS, "barriers"}};
  for (const auto& f : factors)
    if (r.limitingFactors & f.bit) {
      o.limited_by = f.name;
      break;
    }
  // The calculator allocates as the software does (warps x per-warp registers); a launch is
  // checked as if every sub-partition held the block's warps rounded up to their number.
  const std::int64_t per_warp = (std::int64_t(registers_per_thread) * 32 + 255) / 256 * 256;
  o.registers_per_block = per_warp * ((warps + 3) / 4 * 4);
  return o;
}

namespace {

// One launch's verdict: its kernel's ptxas figures against the limits, its geometry on every problem.
StaticVerdict check_launch(const Profile& p, const KernelSpec& k, const Config& c, const PtxasReport& r,
                           const ArchLimits& limits, std::vector<std::string>& why) {
  StaticVerdict v;
  v.ptxas = r;
  // Geometry may depend on problem sizes: the gate must hold for every problem.
  for (const auto& prob : p.problems) {
    LaunchGeometry g = launch_geometry(k, prob, c);
    v.threads_per_block = std::max<int>(v.threads_per_block, static_cast<int>(g.threads()));
    v.dynamic_smem = std::max(v.dynamic_smem, g.shared_bytes);
  }
  v.total_smem = v.dynamic_smem + r.static_smem;
  const auto& L = p.gates.static_limits;
  const int max_threads = std::min(L.max_threads_per_block, limits.max_threads_per_block);
  if (v.threads_per_block > max_threads)
    why.push_back(std::to_string(v.threads_per_block) + " threads per block (limit " + std::to_string(max_threads) + ")");
  if (r.registers < 0) why.push_back("no ptxas report for the entry point (registers unknown)");
  if (r.registers > L.max_registers)
    why.push_back(std::to_string(r.registers) + " registers (limit " + std::to_string(L.max_registers) + ")");
  if (L.max_spill_bytes >= 0 && r.spill_stores + r.spill_loads > L.max_spill_bytes)
    why.push_back(std::to_string(r.spill_stores + r.spill_loads) + " bytes spilled (" + std::to_string(r.spill_stores) +
                  " stores, " + std::to_string(r.spill_loads) + " loads; limit " + std::to_string(L.max_spill_bytes) + ")");
  if (L.max_stack_bytes >= 0 && r.stack_bytes > L.max_stack_bytes)
    why.push_back(std::to_string(r.stack_bytes) + " bytes stack frame (limit " + std::to_string(L.max_stack_bytes) + ")");
  if (v.total_smem > limits.shared_per_block_optin)
    why.push_back(std::to_string(v.total_smem) + " bytes shared memory (" + std::to_string(r.static_smem) + " static + " +
                  std::to_string(v.dynamic_smem) + " dynamic; " + limits.arch + " allows " +
                  std::to_string(limits.shared_per_block_optin) + ")");
  // How many blocks fit an SM, by CUDA's occupancy calculator, for the largest geometry (recorded
  // for every candidate; the insight rules may read it). None: the launch would fail.
  if (r.registers > 0 && v.threads_per_block > 0) {
    const Occupancy o = predict_occupancy(limits, r.registers, v.threads_per_block, r.static_smem, v.dynamic_smem,
                                          r.barriers);
    v.blocks_per_sm = o.blocks_per_sm;
    v.occupancy_pct = o.occupancy_pct;
    v.occupancy_limit = o.limited_by;
    const int warps = (v.threads_per_block + 31) / 32;
    if (!why.empty())
      ;  // already refused, with a plainer reason (threads, registers, shared memory over the limit)
    else if (o.blocks_per_sm == 0 && o.registers_per_block > limits.registers_per_block)
      why.push_back(std::to_string(r.registers) + " registers x " + std::to_string(v.threads_per_block) +
                    " threads: " + std::to_string(warps) + " warps are allocated as " +
                    std::to_string((warps + 3) / 4 * 4) + " (a multiple of the 4 SM sub-partitions), " +
                    std::to_string(o.registers_per_block) + " registers per block (" + limits.arch + " has " +
                    std::to_string(limits.registers_per_block) + "): the launch would fail with too many resources");
    else if (o.blocks_per_sm == 0)
      why.push_back("no block fits an SM (" + (o.limited_by.empty() ? std::string("occupancy calculator") : o.limited_by) +
                    ": " + std::to_string(o.shared_per_block) + " bytes shared memory allocated per block, " +
                    std::to_string(o.registers_per_block) + " registers): the launch would fail");
  }
  // ptxas's own warning: correct, but each wgmma waits for the one before (docs/profiles.md: the cost measured).
  if (L.reject_wgmma_serialized && !r.wgmma_serialized.empty()) {
    std::string what;
    for (const auto& w : r.wgmma_serialized) what += (what.empty() ? "" : "; ") + w;
    why.push_back("wgmma serialised by ptxas (" + what + "; gates.static.wgmma_serialized: reject)");
  }
  return v;
}

}  // namespace

StaticVerdict static_gate(const Profile& p, const Config& c, const Build& b, const ArchLimits& limits) {
  StaticVerdict v;
  v.ptxas = b.ptxas;
  if (!b.ok) {
    v.outcome = Outcome::Skipped;
    v.reason = "not compiled";
    return v;
  }
  std::vector<std::string> why;
  const auto launches = p.launches();
  if (launches.size() == 1) {
    v = check_launch(p, p.kernel, c, b.ptxas, limits, why);
  } else {
    // Every launch's kernel must pass; the verdict's figures are the worst over them (most
    // registers, spills, stack, threads and shared memory; the lowest predicted occupancy; every
    // launch's wgmma serialisation).
    const std::vector<LaunchKernel> kernels = launch_kernels(b);
    if (kernels.size() != launches.size())
      why.push_back("the build has " + std::to_string(kernels.size()) + " kernels for " +
                    std::to_string(launches.size()) + " launches");
    for (std::size_t i = 0; i < launches.size() && i < kernels.size(); ++i) {
      std::vector<std::string> own;
      const StaticVerdict w = check_launch(p, *launches[i], c, kernels[i].ptxas, limits, own);
      for (const auto& o : own) why.push_back("launch " + std::to_string(i + 1) + " (" + launches[i]->name + "): " + o);
      if (i == 0) {
        v = w;
        continue;
      }
      v.ptxas.registers = std::max(v.ptxas.registers, w.ptxas.registers);
      v.ptxas.spill_stores = std::max(v.ptxas.spill_stores, w.ptxas.spill_stores);
      v.ptxas.spill_loads = std::max(v.ptxas.spill_loads, w.ptxas.spill_loads);
      v.ptxas.stack_bytes = std::max(v.ptxas.stack_bytes, w.ptxas.stack_bytes);
      v.ptxas.static_smem = std::max(v.ptxas.static_smem, w.ptxas.static_smem);
      v.ptxas.barriers = std::max(v.ptxas.barriers, w.ptxas.barriers);
      for (const auto& x : w.ptxas.wgmma_serialized)  // every launch's, each once
        if (std::find(v.ptxas.wgmma_serialized.begin(), v.ptxas.wgmma_serialized.end(), x) == v.ptxas.wgmma_serialized.end())
          v.ptxas.wgmma_serialized.push_back(x);
      v.threads_per_block = std::max(v.threads_per_block, w.threads_per_block);
      v.dynamic_smem = std::max(v.dynamic_smem, w.dynamic_smem);
      v.total_smem = std::max(v.total_smem, w.total_smem);
      if (w.occupancy_pct < v.occupancy_pct) {
        v.blocks_per_sm = w.blocks_per_sm;
        v.occupancy_pct = w.occupancy_pct;
        v.occupancy_limit = w.occupancy_limit;
      }
    }
  }
  // A tensor map the driver would refuse (a box or stride for some problem and these knobs) stops
  // here, not in the worker: the first problem it fails on is reason enough.
  for (const auto& m : p.tensor_maps)
    for (const auto& prob : p.problems) {
      try {
        tensor_map_layout(m, p, prob, c);
      } catch (const UserError& e) {
        why.push_back(e.what());
        break;
      }
    }
  v.outcome = why.empty() ? Outcome::Passed : Outcome::Rejected;
  for (const auto& w : why) v.reason += (v.reason.empty() ? "" : "; ") + w;
  return v;
}

}  // namespace evo
