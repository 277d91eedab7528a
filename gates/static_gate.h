// The static gate: resource limits checked from the ptxas report and the launch geometry before
// anything runs, so a launch can never fail with "too many resources requested" and a spilling
// candidate is never timed; every TMA tensor map is evaluated for every problem too, so one the
// driver would refuse never reaches the GPU. Limits come from the profile (gates.static) and the
// target arch.
#pragma once
#include <cstdint>
#include <string>

#include "engine/evaluation.h"
#include "engine/profile.h"

namespace evo {

struct ArchLimits {
  std::string arch;                          // "sm_90"
  int max_threads_per_block = 1024;
  int registers_per_sm = 65536;
  int registers_per_block = 65536;
  int max_registers_per_thread = 255;
  std::int64_t shared_per_block_optin = 0;   // bytes a block may get after cudaFuncSetAttribute
};

// Known for sm_75 … sm_121 (what NVRTC 13.0 targets); an unknown arch throws UserError.
ArchLimits arch_limits(const std::string& arch);

// Registers a block really occupies: per-warp allocation in units of 256 registers.
std::int64_t allocated_registers(int registers_per_thread, std::int64_t threads_per_block);

StaticVerdict static_gate(const Profile& p, const Config& c, const Build& b, const ArchLimits& limits);

}  // namespace evo
