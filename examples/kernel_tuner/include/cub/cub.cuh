// Stands in for cub/cub.cuh in the kernels of Kernel Tuner's examples (expdist.json puts this
// folder first on its include path). NVRTC compiles device code alone, and cub/cub.cuh brings in
// cub's device-wide algorithms, whose host halves it refuses ("A function explicitly marked as a
// __host__ function is not allowed in JIT mode"); nvcc, which Kernel Tuner uses, compiles both.
// The examples use cub's block-level reduction only, which NVRTC compiles.
#pragma once
#include <cub/block/block_reduce.cuh>
