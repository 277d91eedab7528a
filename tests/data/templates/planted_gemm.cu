// Planted faults for the GPU gates' tests: a plain shared-memory tiled GEMM (f32), correct when
// PLANT=0, and with PLANT=1..5 one deliberate bug each gate must catch:
//   1 off-by-one tile: the last K tile is never multiplied   -> GREEN fails with its figures
//   2 faulting store to an unmapped address                   -> crash (illegal address)
//   3 one block spins forever                                 -> timeout
//   4 one element written as NaN                              -> GREEN fails (NaN)
//   5 reads one element past the end of A, result unchanged   -> GREEN passes, memcheck fails
// C[M,N] = A[M,K] · B[K,N], row-major; M, N, K multiples of TILE. Launch: grid (N/TILE, M/TILE),
// block (TILE, TILE).
#ifndef TILE
#define TILE 16   // C tile edge, threads per block edge
#endif
#ifndef PLANT
#define PLANT 0   // which bug (0: none)
#endif
static_assert(TILE == 8 || TILE == 16, "TILE must be 8 or 16");

extern "C" __global__ void planted_gemm(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float sA[TILE][TILE + 1], sB[TILE][TILE + 1];  // +1: no bank conflicts on the column reads
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  int tiles = K / TILE;
#if PLANT == 1  // planted: off by one, the last K tile is skipped
  tiles -= 1;
#endif
  float acc = 0.f;
  for (int t = 0; t < tiles; ++t) {
    sA[ty][tx] = A[(size_t)row * K + t * TILE + tx];
    sB[ty][tx] = B[(size_t)(t * TILE + ty) * N + col];
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += sA[ty][k] * sB[k][tx];
    __syncthreads();
  }
#if PLANT == 2  // planted: a store 4 TB past C, far outside any allocation
  if (row == 0 && col == 0) C[(size_t)1 << 40] = acc;
#elif PLANT == 3  // planted: block (0,0) never finishes
  if (blockIdx.x == 0 && blockIdx.y == 0)
    for (;;) __nanosleep(1000);
#elif PLANT == 4  // planted: C[3,5] is NaN
  if (row == 3 && col == 5) acc = __int_as_float(0x7fc00000);
#elif PLANT == 5  // planted: a read one element past the end of A; volatile keeps it, the value is unused
  if (row == 0 && col == 0) (void)*(const volatile float*)(A + (size_t)M * K);
#endif
  C[(size_t)row * N + col] = acc;
}
