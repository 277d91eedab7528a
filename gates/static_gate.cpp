#include "gates/static_gate.h"

#include <algorithm>
#include <map>

#include "engine/error.h"
#include "engine/launch.h"

namespace evo {

ArchLimits arch_limits(const std::string& arch) {
  // Shared memory per block (opt-in) from the CUDA programming guide's compute-capability table.
  static const std::map<int, std::int64_t> smem_optin = {
      {75, 64 * 1024}, {80, 163 * 1024}, {86, 99 * 1024}, {87, 163 * 1024}, {88, 99 * 1024},
      {89, 99 * 1024}, {90, 227 * 1024}, {100, 227 * 1024}, {103, 227 * 1024}, {110, 227 * 1024},
      {120, 99 * 1024}, {121, 99 * 1024}};
  std::string digits;
  for (char ch : arch) if (ch >= '0' && ch <= '9') digits += ch;
  int cc = digits.empty() ? 0 : std::stoi(digits);
  auto it = smem_optin.find(cc);
  if (it == smem_optin.end()) throw UserError("arch '" + arch + "': unknown target (known: sm_75 to sm_121)");
  ArchLimits l;
  l.arch = arch;
  l.shared_per_block_optin = it->second;
  if (cc == 75) l.max_threads_per_block = 1024, l.registers_per_block = 65536;
  return l;
}

std::int64_t allocated_registers(int registers_per_thread, std::int64_t threads_per_block) {
  const std::int64_t warps = (threads_per_block + 31) / 32;
  const std::int64_t per_warp = (std::int64_t(registers_per_thread) * 32 + 255) / 256 * 256;
  return warps * per_warp;
}

StaticVerdict static_gate(const Profile& p, const Config& c, const Build& b, const ArchLimits& limits) {
  StaticVerdict v;
  v.ptxas = b.ptxas;
  if (!b.ok) {
    v.outcome = Outcome::Skipped;
    v.reason = "not compiled";
    return v;
  }
  // Geometry may depend on problem sizes: the gate must hold for every problem.
  for (const auto& prob : p.problems) {
    LaunchGeometry g = launch_geometry(p.kernel, prob, c);
    v.threads_per_block = std::max<int>(v.threads_per_block, static_cast<int>(g.threads()));
    v.dynamic_smem = std::max(v.dynamic_smem, g.shared_bytes);
  }
  v.total_smem = v.dynamic_smem + b.ptxas.static_smem;
  const auto& L = p.gates.static_limits;
  const auto& r = b.ptxas;
  std::vector<std::string> why;
  const int max_threads = std::min(L.max_threads_per_block, limits.max_threads_per_block);
  if (v.threads_per_block > max_threads)
    why.push_back(std::to_string(v.threads_per_block) + " threads per block (limit " + std::to_string(max_threads) + ")");
  if (r.registers < 0) why.push_back("no ptxas report for the entry point (registers unknown)");
  if (r.registers > L.max_registers)
    why.push_back(std::to_string(r.registers) + " registers (limit " + std::to_string(L.max_registers) + ")");
  if (r.spill_stores + r.spill_loads > L.max_spill_bytes)
    why.push_back(std::to_string(r.spill_stores + r.spill_loads) + " bytes spilled (" + std::to_string(r.spill_stores) +
                  " stores, " + std::to_string(r.spill_loads) + " loads; limit " + std::to_string(L.max_spill_bytes) + ")");
  if (L.max_stack_bytes >= 0 && r.stack_bytes > L.max_stack_bytes)
    why.push_back(std::to_string(r.stack_bytes) + " bytes stack frame (limit " + std::to_string(L.max_stack_bytes) + ")");
  if (v.total_smem > limits.shared_per_block_optin)
    why.push_back(std::to_string(v.total_smem) + " bytes shared memory (" + std::to_string(r.static_smem) + " static + " +
                  std::to_string(v.dynamic_smem) + " dynamic; " + limits.arch + " allows " +
                  std::to_string(limits.shared_per_block_optin) + ")");
  if (r.registers > 0) {
    const std::int64_t regs = allocated_registers(r.registers, v.threads_per_block);
    if (regs > limits.registers_per_block)
      why.push_back(std::to_string(r.registers) + " registers x " + std::to_string(v.threads_per_block) +
                    " threads needs " + std::to_string(regs) + " registers per block (" + limits.arch + " has " +
                    std::to_string(limits.registers_per_block) + "): the launch would fail with too many resources");
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
