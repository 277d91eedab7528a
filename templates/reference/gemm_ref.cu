// templates/reference/gemm_ref.cu — the trusted GEMM that GREEN compares gemm.cu to.
//
// Deliberately plain: one thread per element of C, fp32 accumulation in K order, no shared
// memory, no tensor cores, bounds-checked, so it can be read and believed in a minute.
//   C[m, n] = sum_k A[m, k] * B[k, n]
//   A: [M, K] f16 row-major    B: [K, N] f16 row-major    C: [M, N] f32 row-major
// Launch: grid = (cdiv(N, 16), cdiv(M, 16)), block = (16, 16, 1), no dynamic shared memory.
#include <cuda_fp16.h>  // defines: __half, __half2float

extern "C" __global__ void gemm_ref(const __half* A, const __half* B, float* C, int M, int N, int K) {
  const int n = blockIdx.x * blockDim.x + threadIdx.x;
  const int m = blockIdx.y * blockDim.y + threadIdx.y;
  if (m >= M || n >= N) return;
  float acc = 0.0f;
  for (int k = 0; k < K; ++k) acc += __half2float(A[(size_t)m * K + k]) * __half2float(B[(size_t)k * N + n]);
  C[(size_t)m * N + n] = acc;
}
