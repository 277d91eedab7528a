// The trusted reference of templates/examples/reduce.cu: one block of 256 threads, each summing
// a strided share of X in double, then a tree in double; SUM[0] is rounded to float once.
constexpr int kThreads = 256;

extern "C" __global__ void reduce_ref(const float* X, float* SUM, int N) {
  __shared__ double s[kThreads];
  double v = 0.0;
  for (int i = threadIdx.x; i < N; i += kThreads) v += X[i];
  s[threadIdx.x] = v;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) s[threadIdx.x] += s[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) SUM[0] = static_cast<float>(s[0]);
}
