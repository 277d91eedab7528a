// evo's reference for Kernel Tuner's matmul example: C = A · B, square N x N, row-major, one
// thread per element, accumulated in double so that the reference's own rounding is not part of
// what GREEN measures.
extern "C" __global__ void matmul_ref(float* C, const float* A, const float* B, int N) {
  const int col = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y * blockDim.y + threadIdx.y;
  if (row >= N || col >= N) return;
  double acc = 0.0;
  for (int k = 0; k < N; ++k) acc += (double)A[row * N + k] * (double)B[k * N + col];
  C[row * N + col] = (float)acc;
}
