// Launch geometry of a kernel for one problem and config: the profile's grid/block/shared-memory
// expressions evaluated, and the layout of its TMA tensor maps. Used by the static gate (before
// anything runs) and by the worker. Host only: nothing here calls CUDA.
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

// A tensor map's arguments to cuTensorMapEncodeTiled for one problem and config (the global
// address aside): the packed tensor's dims and byte strides, innermost first, and the box.
struct TensorMapLayout {
  std::string name;  // the map's, for messages
  DType dtype = DType::F32;
  int rank = 0;
  std::array<std::uint64_t, 5> dims{};           // elements; dims[rank..] unused
  std::array<std::uint64_t, 4> strides_bytes{};  // of dims[1] .. dims[rank-1]
  std::array<std::uint32_t, 5> box{};
  int swizzle_bytes = 0;
  int l2_promotion_bytes = 128;
};

// Evaluates `m` (one of p's tensor_maps) with expression_vars(p.kernel, problem, config) and checks
// what cuTensorMapEncodeTiled would refuse: dims 1..2^32 covering the buffer exactly, strides a
// multiple of 16 below 2^40, box entries 1..256 with the inner one a multiple of 16 bytes and, with
// a swizzle, within its span. Throws UserError("tensor_maps[i].box[0]: ... (map k_map, problem p)").
TensorMapLayout tensor_map_layout(const TensorMapSpec& m, const Profile& p, const Problem& problem, const Config& c);

// The CUtensorMapDataType of a buffer dtype (fp8 travels as UINT8: raw bytes): the enumerator's
// name, as exports spell it, and its value, as cuTensorMapEncodeTiled takes it.
struct TensorMapDataType {
  const char* name;
  int value;
};
TensorMapDataType tensor_map_data_type(DType t);

}  // namespace evo
