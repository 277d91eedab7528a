// Trusted reference for foreign_kernel.cu: one element per thread, the same __constant__ table.
#define COEFFS 16

__constant__ float coeffs[COEFFS];

extern "C" __global__ void scale_ref(float* y, const float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = coeffs[i % COEFFS] * x[i];
}
