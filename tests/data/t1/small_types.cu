// tests/data/t1/small_types.json's kernel: every argument type a T1 file may give beyond float and
// int32. A uint8 signal, float4 weights, a __device__ bias read by name (a Symbol argument), an
// int64 offset and a uint32 count by value; a double sum, an int16 difference and a bool flag out.
// The tuning parameters (block_size_x, items) change only which thread computes which element.
__device__ float bias[4];

extern "C" __global__ void mix(double* sum, short* diff, bool* high, const unsigned char* signal, const float4* w,
                               long long offset, unsigned int n) {
  const unsigned first = (blockIdx.x * block_size_x + threadIdx.x) * items;
  for (int k = 0; k < items; ++k) {
    const unsigned i = first + k;
    if (i >= n) return;
    const float4 q = w[i];
    sum[i] = (double)signal[i] * q.x + q.y * q.z - q.w + bias[i % 4] + (double)offset;
    diff[i] = (short)((int)signal[i] - 128) * 3;
    high[i] = signal[i] > 127;
  }
}
