// Launch geometry of a kernel for one problem and config: the profile's grid/block/shared-memory
// expressions evaluated. Used by the static gate (before anything runs) and by the worker.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "engine/profile.h"
#include "engine/space.h"

namespace evo {

struct LaunchGeometry {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::int64_t shared_bytes = 0;  // dynamic
  std::int64_t threads() const { return std::int64_t(block[0]) * block[1] * block[2]; }
};

// Throws UserError naming the expression if one evaluates to a negative, zero (grid/block) or
// non-integral value.
LaunchGeometry launch_geometry(const KernelSpec& k, const Problem& p, const Config& c);

// Element count of a buffer for one problem and config.
std::int64_t buffer_elements(const BufferSpec& b, const KernelSpec& k, const Problem& p, const Config& c);

}  // namespace evo
