// A kernel as a user of another tuner (Kernel Tuner, KTT) writes it, taken as it is:
//   y[i] = coeffs[i % COEFFS] * x[i]      for 0 <= i < n
// - the entry point is a C++ function template in a namespace, not extern "C": the profile names
//   an instantiation ("foreign::scale<float, block_size_x, tile_size_x>"), which NVRTC resolves
//   through nvrtcAddNameExpression and nvrtcGetLoweredName;
// - the knobs block_size_x and tile_size_x have no default here: the tuner always passes
//   -Dblock_size_x=... -Dtile_size_x=..., and without them this file does not compile;
// - coeffs is a __constant__ table the host fills before the launch (the profile's buffer with
//   "symbol": "coeffs"), not a kernel argument;
// - each block covers block_size_x * tile_size_x elements, so the grid is
//   n / (block_size_x * tile_size_x), as Kernel Tuner's grid_div_x = ["block_size_x", "tile_size_x"].
#define COEFFS 16

__constant__ float coeffs[COEFFS];

namespace foreign {

template <typename T, int BLOCK, int TILE>
__global__ void scale(T* __restrict__ y, const T* __restrict__ x, int n) {
  static_assert(BLOCK % 32 == 0, "block_size_x must be a multiple of the warp size");
  const int first = blockIdx.x * BLOCK * TILE + threadIdx.x;
#pragma unroll
  for (int t = 0; t < TILE; ++t) {  // consecutive threads touch consecutive elements
    const int i = first + t * BLOCK;
    if (i < n) y[i] = coeffs[i % COEFFS] * x[i];
  }
}

}  // namespace foreign

// Instantiated for the knobs the tuner chose: a name expression names it, no wrapper needed.
static_assert(block_size_x > 0 && tile_size_x > 0, "block_size_x and tile_size_x are given by the tuner");
