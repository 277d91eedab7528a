#include "engine/launch.h"

#include <cmath>

#include "engine/error.h"
#include "engine/expr.h"

namespace evo {
namespace {

std::int64_t integral(const std::string& what, const std::string& text, const Vars& v, std::int64_t min) {
  double x = eval_expr(text, v);
  if (!std::isfinite(x) || x != std::floor(x) || x < static_cast<double>(min))
    throw UserError(what + " '" + text + "' = " + std::to_string(x) + ": must be an integer >= " + std::to_string(min));
  return static_cast<std::int64_t>(x);
}

}  // namespace

LaunchGeometry launch_geometry(const KernelSpec& k, const Problem& p, const Config& c) {
  const Vars v = expression_vars(k, p, c);
  LaunchGeometry g;
  for (int i = 0; i < 3; ++i) {
    g.grid[i] = static_cast<std::uint32_t>(integral("launch.grid", k.launch.grid[i], v, 1));
    g.block[i] = static_cast<std::uint32_t>(integral("launch.block", k.launch.block[i], v, 1));
  }
  g.shared_bytes = integral("launch.shared_bytes", k.launch.shared_bytes, v, 0);
  return g;
}

std::int64_t buffer_elements(const BufferSpec& b, const KernelSpec& k, const Problem& p, const Config& c) {
  const Vars v = expression_vars(k, p, c);
  std::int64_t n = 1;
  for (const auto& e : b.shape) n *= integral("buffers." + b.name + ".shape", e, v, 1);
  return n;
}

}  // namespace evo
