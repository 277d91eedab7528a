// Example of a profile with two launches (docs/profiles.md "launches", profiles/reduce_sum.json):
// SUM = the sum of X, in two kernels on the same buffers. partial_sums: block b sums its
// BLOCK * ITEMS elements into PARTIAL[b] (a scratch buffer sized by the knobs); final_sum: one
// block of FINAL_BLOCK threads sums the partials into SUM[0]. GREEN compares SUM after the second
// launch; FAST times the two launches together as one unit.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 4
#endif
#ifndef FINAL_BLOCK
#define FINAL_BLOCK 256
#endif
static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK must be a multiple of 32, at most 1024");
static_assert(FINAL_BLOCK % 32 == 0 && FINAL_BLOCK <= 1024, "FINAL_BLOCK must be a multiple of 32, at most 1024");

constexpr unsigned kFullWarp = 0xffffffffu;

__device__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(kFullWarp, v, offset);
  return v;  // lane 0's is the warp's sum
}

// Every thread's v summed: each warp by shuffles, then the warps' totals by the first warp.
template <int THREADS>
__device__ float block_sum(float v) {
  __shared__ float warp_totals[THREADS / 32];
  v = warp_sum(v);
  if (threadIdx.x % 32 == 0) warp_totals[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < THREADS / 32 ? warp_totals[threadIdx.x] : 0.0f;
  if (threadIdx.x < 32) v = warp_sum(v);
  return v;  // thread 0's is the block's sum
}

// Launch 1: grid cdiv(N, BLOCK * ITEMS), block BLOCK. Each thread adds ITEMS elements, BLOCK apart.
extern "C" __global__ void __launch_bounds__(BLOCK) partial_sums(const float* X, float* PARTIAL, int N) {
  const long long base = static_cast<long long>(blockIdx.x) * BLOCK * ITEMS + threadIdx.x;
  float v = 0.0f;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {  // knob ITEMS: elements per thread
    const long long i = base + static_cast<long long>(k) * BLOCK;
    if (i < N) v += X[i];
  }
  v = block_sum<BLOCK>(v);
  if (threadIdx.x == 0) PARTIAL[blockIdx.x] = v;
}

// Launch 2: grid 1, block FINAL_BLOCK. The partials launch 1 left, summed into SUM[0].
extern "C" __global__ void __launch_bounds__(FINAL_BLOCK) final_sum(const float* PARTIAL, float* SUM, int partials) {
  float v = 0.0f;
  for (int i = threadIdx.x; i < partials; i += FINAL_BLOCK) v += PARTIAL[i];
  v = block_sum<FINAL_BLOCK>(v);
  if (threadIdx.x == 0) SUM[0] = v;
}
