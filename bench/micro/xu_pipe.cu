// Which conversions share the MUFU (XU) pipe with ex2 on this GPU? Each thread runs 8 independent streams of
// one or two instruction kinds; 16 warps a block, one block per SM; prints results a clock an SM (clock64 of
// each block, the slowest) per mode. If ex2 + cvt together take the sum of their times alone, they share a pipe.
//   nvcc -gencode arch=compute_90a,code=sm_90a -O3 -o xu_pipe xu_pipe.cu && ./xu_pipe
#include <cstdio>
#include <cuda_runtime.h>

#define EX2(x) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x))
#define CVT8(h, a, b) asm volatile("{.reg .b16 t; cvt.rn.satfinite.e4m3x2.f32 t, %1, %2; cvt.u32.u16 %0, t;}" : "=r"(h) : "f"(a), "f"(b))
#define CVT16(h, a, b) asm volatile("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(h) : "f"(a), "f"(b))
#define FMA(x) asm volatile("fma.rn.f32 %0, %0, 0f3F7FFFFF, 0f3A000000;" : "+f"(x))

template <int MODE>
__global__ void __launch_bounds__(512, 1) bench(int iters, float* out, long long* clocks) {
  float x[8];
  unsigned acc = 0, h[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) x[i] = -0.001f * (threadIdx.x + i);
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      if (MODE == 0 || MODE == 3 || MODE == 4) EX2(x[i]);
      if (MODE == 1 || MODE == 3) CVT8(h[i], x[i], x[(i + 1) & 7]);
      if (MODE == 2 || MODE == 4) CVT16(h[i], x[i], x[(i + 1) & 7]);
      if (MODE == 5) FMA(x[i]);
    }
    if (MODE >= 1 && MODE <= 4) {
#pragma unroll
      for (int i = 0; i < 8; ++i) acc ^= h[i];
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  float s = acc;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += x[i];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) clocks[blockIdx.x] = t1 - t0;
}

template <int MODE>
double run(int sms, int iters, float* out, long long* clocks, long long* host) {
  bench<MODE><<<sms, 512>>>(iters, out, clocks);
  bench<MODE><<<sms, 512>>>(iters, out, clocks);
  cudaMemcpy(host, clocks, sms * sizeof(long long), cudaMemcpyDeviceToHost);
  long long worst = 0;
  for (int i = 0; i < sms; ++i) worst = host[i] > worst ? host[i] : worst;
  return 512.0 * iters * 8 / worst;  // instructions' results a clock an SM (8 per thread per iteration, per kind)
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float* out;
  long long *clocks, host[1024];
  cudaMalloc(&out, sms * 512 * sizeof(float));
  cudaMalloc(&clocks, sms * sizeof(long long));
  const int iters = 4096;
  const char* names[] = {"ex2.approx.f32 alone", "cvt e4m3x2.f32 alone (+xor)", "cvt f16x2.f32 alone (+xor)",
                         "ex2 + cvt e4m3x2 (each)", "ex2 + cvt f16x2 (each)", "fma alone"};
  double r[6] = {run<0>(sms, iters, out, clocks, host), run<1>(sms, iters, out, clocks, host),
                 run<2>(sms, iters, out, clocks, host), run<3>(sms, iters, out, clocks, host),
                 run<4>(sms, iters, out, clocks, host), run<5>(sms, iters, out, clocks, host)};
  cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) { printf("CUDA error: %s\n", cudaGetErrorString(e)); return 1; }
  for (int m = 0; m < 6; ++m) printf("%-30s %6.1f results a clock an SM\n", names[m], r[m]);
  // shared pipe: (ex2 + cvt) per clock of each = 1 / (1/r_ex2 + 1/r_cvt); separate pipes: min(r_ex2, r_cvt)
  printf("ex2+e4m3 if one pipe %.1f, if separate %.1f; ex2+f16x2 if one pipe %.1f, if separate %.1f\n",
         1 / (1 / r[0] + 1 / r[1]), r[0] < r[1] ? r[0] : r[1], 1 / (1 / r[0] + 1 / r[2]), r[0] < r[2] ? r[0] : r[2]);
  return 0;
}
