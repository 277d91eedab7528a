// templates/reference/sdpa_ref.cu — the trusted attention forward that GREEN compares sdpa.cu to.
//
// Deliberately plain: one block per query row, fp32 throughout, a full softmax (no online
// rescaling, no tiling, no tensor cores), so it can be read and believed in a minute. Two plain
// choices keep its threads busy (it is the first GREEN's fixed cost on every GPU of a run: the
// long problem's S = 4096 took 76 ms, now 35 ms on an H200; docs/results/scale16): a key's score is
// one warp's coalesced dot product, and each output column is summed by two threads over
// alternate keys when HEAD_DIM is half the block.
//   O[b,h,i,:] = sum_j p_j V[b,h,j,:],  p_j = exp(s_j - max s) / sum exp(s - max s),
//   s_j = softmax_scale * (q_descale Q[b,h,i,:]) · (k_descale K[b,h,j,:]),  j > i dropped if causal.
// Inputs are dequantised exactly as the candidate sees them: fp16 as is, fp8 e4m3 times its descale.
// Tensors are [B, H, S, HEAD_DIM] contiguous; O is fp16.
// Launch: grid = (S, B * H), block = (128, 1, 1), dynamic shared memory = S * 4 bytes (the scores).

#include <cuda_fp16.h>  // defines: __half, __half2float, __float2half_rn
#include <cuda_fp8.h>   // defines: __nv_fp8_e4m3 (and its conversion to float)

#ifndef HEAD_DIM
#define HEAD_DIM 64
#endif
#ifndef IN_FP8
#define IN_FP8 0
#endif

#if IN_FP8
typedef __nv_fp8_e4m3 IN_T;
#else
typedef __half IN_T;
#endif

__device__ __forceinline__ float to_f32(IN_T x) { return static_cast<float>(x); }

constexpr int REF_THREADS = 128;

// Block-wide reduction through shared memory; op is max or +. Every thread gets the result.
template <bool IS_MAX>
__device__ float block_reduce(float v, float* red) {
  red[threadIdx.x] = v;
  __syncthreads();
  for (int s = REF_THREADS / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) red[threadIdx.x] = IS_MAX ? fmaxf(red[threadIdx.x], red[threadIdx.x + s]) : red[threadIdx.x] + red[threadIdx.x + s];
    __syncthreads();
  }
  const float r = red[0];
  __syncthreads();  // red is reused by the next reduction
  return r;
}

extern "C" __global__ void __launch_bounds__(REF_THREADS)
sdpa_ref(const IN_T* __restrict__ Q, const IN_T* __restrict__ K, const IN_T* __restrict__ V, __half* __restrict__ O,
         float q_descale, float k_descale, float v_descale, float softmax_scale, int B, int H, int S, int causal) {
  extern __shared__ float scores[];  // S floats
  __shared__ float q[HEAD_DIM];
  __shared__ float red[REF_THREADS];
  if (blockDim.x != REF_THREADS) __trap();  // a wrong launch is an error, never a wrong answer

  const int i = blockIdx.x;  // query row
  const long long head = (long long)blockIdx.y * S * HEAD_DIM;
  const int n_keys = causal ? i + 1 : S;  // keys this row may see

  for (int d = threadIdx.x; d < HEAD_DIM; d += REF_THREADS) q[d] = to_f32(Q[head + (long long)i * HEAD_DIM + d]) * q_descale;
  __syncthreads();

  // 1. scores and their maximum: a warp a key, its lanes across the head dimension, so a key's row
  // is read in one coalesced load and every block's threads do not each walk a row of their own
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float mx = __int_as_float(0xff800000);  // -inf (NVRTC has no math.h INFINITY)
  for (int j = warp; j < n_keys; j += REF_THREADS / 32) {
    const IN_T* k = K + head + (long long)j * HEAD_DIM;
    float s = 0.f;
    for (int d = lane; d < HEAD_DIM; d += 32) s += q[d] * (to_f32(k[d]) * k_descale);
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);  // every lane: the whole sum
    s *= softmax_scale;
    if (lane == 0) scores[j] = s;
    mx = fmaxf(mx, s);
  }
  mx = block_reduce<true>(mx, red);

  // 2. probabilities (unnormalised) and their sum
  float sum = 0.f;
  for (int j = threadIdx.x; j < n_keys; j += REF_THREADS) {
    const float p = expf(scores[j] - mx);
    scores[j] = p;
    sum += p;
  }
  sum = block_reduce<false>(sum, red);  // its barriers also publish every scores[j]

  // 3. O = P·V / sum: each output column summed by REF_THREADS / HEAD_DIM threads over every
  // that many-th key, their partial sums then added in order
  constexpr int PARTS = HEAD_DIM < REF_THREADS ? REF_THREADS / HEAD_DIM : 1;
  for (int d0 = 0; d0 < HEAD_DIM; d0 += REF_THREADS / PARTS) {
    const int d = d0 + threadIdx.x % (REF_THREADS / PARTS), part = threadIdx.x / (REF_THREADS / PARTS);
    float acc = 0.f;
    if (d < HEAD_DIM)
      for (int j = part; j < n_keys; j += PARTS) acc += scores[j] * (to_f32(V[head + (long long)j * HEAD_DIM + d]) * v_descale);
    red[threadIdx.x] = acc;
    __syncthreads();
    if (part == 0 && d < HEAD_DIM) {
      for (int p = 1; p < PARTS; ++p) acc += red[threadIdx.x + p * (REF_THREADS / PARTS)];
      O[head + (long long)i * HEAD_DIM + d] = __float2half_rn(acc / sum);
    }
    __syncthreads();
  }
}
