// How many warps a scheduler needs to keep the MUFU busy: ex2 results a clock an SM with 1, 2, 3 and 4 warps
// per scheduler (128 .. 512 threads, one block per SM), for ex2 alone (8 independent chains a thread) and for
// the softmax's element (FFMA, ex2, FADD into one of 4 partial sums; 8 elements in flight a thread).
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o mufu_warps mufu_warps.cu && ./mufu_warps
#include <cstdio>
#include <cuda_runtime.h>

template <int MODE>
__global__ void __launch_bounds__(512, 1) bench(int iters, float* out, long long* clocks) {
  float x[8], acc[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = -0.001f * (threadIdx.x + i);
  const float scale = 1.0001f, m = 0.5f;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (MODE == 0) {
        asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[i]));
      } else {  // the softmax's element: y = s * scale - m; p = 2^y; sum += p
        float y, p;
        asm volatile("fma.rn.f32 %0, %1, %2, %3;" : "=f"(y) : "f"(x[i]), "f"(scale), "f"(-m));
        asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(p) : "f"(y));
        asm volatile("add.f32 %0, %0, %1;" : "+f"(acc[i & 3]) : "f"(p));
        x[i] = p;  // (a new input each iteration: else ptxas hoists the loop-invariant FFMA and ex2)
      }
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = acc[0] + acc[1] + acc[2] + acc[3];
#pragma unroll
  for (int i = 0; i < 8; ++i) s += x[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) clocks[blockIdx.x] = t1 - t0;
}

template <int MODE>
double run(int sms, int threads, int iters, float* out, long long* clocks) {
  static long long host[1024];
  bench<MODE><<<sms, threads>>>(iters, out, clocks);
  bench<MODE><<<sms, threads>>>(iters, out, clocks);
  cudaMemcpy(host, clocks, sms * sizeof(long long), cudaMemcpyDeviceToHost);
  long long worst = 0;
  for (int i = 0; i < sms; ++i) worst = host[i] > worst ? host[i] : worst;
  return (double)threads * iters * 8 / worst;  // ex2 results a clock an SM
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* out;
  long long* clocks;
  cudaMalloc(&out, sms * 512 * sizeof(float));
  cudaMalloc(&clocks, sms * sizeof(long long));
  printf("%-34s %8s %8s %8s %8s\n", "ex2 a clock an SM, warps/scheduler:", "1", "2", "3", "4");
  for (int mode = 0; mode < 2; ++mode) {
    printf("%-34s", mode ? "softmax element (FFMA, ex2, FADD)" : "ex2 alone, 8 chains a thread");
    for (int w = 1; w <= 4; ++w)
      printf(" %8.1f", mode ? run<1>(sms, 128 * w, 4096, out, clocks) : run<0>(sms, 128 * w, 4096, out, clocks));
    printf("\n");
  }
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("CUDA error: %s\n", cudaGetErrorString(e)); return 1; }
  return 0;
}
