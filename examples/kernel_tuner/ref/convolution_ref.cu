// evo's reference for Kernel Tuner's convolution example: one thread per output pixel, the
// filter read from the same __constant__ symbol the tuned kernel reads (Kernel Tuner's cmem_args),
// sums in the kernel's order (row by row of the filter) but in double, so the comparison's
// tolerance covers only the tuned kernel's float rounding.
__constant__ float d_filter[33 * 33];  // the tuned kernel's declaration: large enough for 33x33

extern "C" __global__ void convolution_ref(float* output, const float* input, int w, int h, int f) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  const int input_width = w + f - 1;
  double sum = 0;
  for (int i = 0; i < f; ++i)
    for (int j = 0; j < f; ++j) sum += (double)input[(y + i) * input_width + x + j] * d_filter[i * f + j];
  output[y * w + x] = (float)sum;
}
