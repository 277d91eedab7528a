// The static gate: resource limits checked from the ptxas report and the launch geometry before
// anything runs, so a launch can never fail with "too many resources requested" and a spilling
// candidate is never timed; every TMA tensor map is evaluated for every problem too, so one the
// driver would refuse never reaches the GPU; and, where the profile says "reject", a build whose
// wgmma pipeline ptxas serialised (PtxasReport::wgmma_serialized). Limits come from the profile
// (gates.static) and the target arch. Whether a block fits an SM at all, and how many do, is
// CUDA's own occupancy calculator's answer (cuda_occupancy.h, header-only in the toolkit):
// registers are allocated per warp and per SM sub-partition (a block's warps rounded up to a
// multiple of 4), shared memory in its allocation granularity with the part the driver reserves
// per block.
#pragma once
#include <cstdint>
#include <string>

#include "engine/evaluation.h"
#include "engine/profile.h"

namespace evo {

struct ArchLimits {
  std::string arch;                          // "sm_90"
  int cc_major = 9, cc_minor = 0;
  int max_threads_per_block = 1024;
  int max_threads_per_sm = 2048;
  int registers_per_sm = 65536;
  int registers_per_block = 65536;
  int max_registers_per_thread = 255;
  std::int64_t shared_per_block = 48 * 1024;    // without opting in
  std::int64_t shared_per_block_optin = 0;      // bytes a block may get after cudaFuncSetAttribute
  std::int64_t shared_per_sm = 0;
  std::int64_t reserved_shared_per_block = 0;   // the driver's own, per block (1 KB since sm_80)
};

// Known for sm_75 … sm_121 (what NVRTC 13.0 targets); an unknown arch throws UserError.
ArchLimits arch_limits(const std::string& arch);

// What cuda_occupancy.h predicts for one kernel launched with these resources.
struct Occupancy {
  int blocks_per_sm = 0;              // 0: the launch would fail for resources
  double occupancy_pct = 0;           // resident warps / the SM's maximum warps
  std::string limited_by;             // "warps" "registers" "shared memory" "blocks" "barriers"
  std::int64_t registers_per_block = 0;  // as the hardware checks a launch (warps rounded up to sub-partitions)
  std::int64_t shared_per_block = 0;     // allocated: with the reserved part, rounded to the granularity
};
Occupancy predict_occupancy(const ArchLimits& limits, int registers_per_thread, int threads_per_block,
                            std::int64_t static_smem, std::int64_t dynamic_smem, int barriers);

// Every launch's kernel (launch_kernels(b), one per launch) against its own geometry. With several
// launches the candidate is rejected if any one is, each reason naming its launch ("launch 2
// (final_sum): 300 registers (limit 255)"), and the figures are the worst over them.
StaticVerdict static_gate(const Profile& p, const Config& c, const Build& b, const ArchLimits& limits);

}  // namespace evo
