// evo's reference for Kernel Tuner's zero-mean filter (vertical pass): for each column j of an
// h x w image, subtract the mean of its even rows from the even rows and the mean of its odd rows
// from the odd rows, in place. One thread per column, sums in double.
extern "C" __global__ void zeromean_vertical_ref(int h, int w, float* input) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= w) return;
  double even = 0.0, odd = 0.0;
  for (int i = 0; i < h; ++i) (i % 2 == 0 ? even : odd) += input[i * w + j];
  const float mean_even = (float)(even / ((h + 1) / 2));
  const float mean_odd = (float)(odd / (h / 2));
  for (int i = 0; i < h; ++i) input[i * w + j] -= (i % 2 == 0 ? mean_even : mean_odd);
}

// The horizontal pass: the same per row (even and odd columns), one thread per row.
extern "C" __global__ void zeromean_horizontal_ref(int h, int w, float* input) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= h) return;
  double even = 0.0, odd = 0.0;
  for (int j = 0; j < w; ++j) (j % 2 == 0 ? even : odd) += input[i * w + j];
  const float mean_even = (float)(even / ((w + 1) / 2));
  const float mean_odd = (float)(odd / (w / 2));
  for (int j = 0; j < w; ++j) input[i * w + j] -= (j % 2 == 0 ? mean_even : mean_odd);
}
