// tests/data/t1/small_saxpy.json's kernel: y += a * x * w, w from a __constant__ table (use_table)
// or 0.5. Its tuning parameters come from the T1 file as -D defines; it has no defaults of its own.
__constant__ float table[16];

extern "C" __global__ void saxpy(float* y, const float* x, const float* table_copy, float a, int n) {
  const int first = blockIdx.x * block_size_x * tile + threadIdx.x;
#pragma unroll
  for (int t = 0; t < tile; ++t) {
    const int i = first + t * block_size_x;
    // table_copy: the same values as `table`, in global memory (Kernel Tuner passes both).
    const float w = use_table ? table[t] : table_copy[t];
    if (i < n) y[i] += a * x[i] * w;
  }
}
