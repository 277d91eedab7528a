// Two warpgroup MMAs in one pipeline stage: the test kernel of the static gate's
// gates.static.wgmma_serialized (tests/data/profiles/wgmma_serialized.json). Compile-only test data:
// the descriptors point at an uninitialised tile, so the result means nothing and is never checked.
//
// knob CALL_BETWEEN: 0 issues the two wgmma.mma_async back to back, and ptxas keeps the pipeline;
// 1 calls a non-inlined function on an accumulator between them, and ptxas (CUDA 13) serialises them:
//   (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to
//   insufficient register resources for the wgmma pipeline in the function 'wgmma_pair'
// Needs sm_90a.
#ifndef CALL_BETWEEN
#define CALL_BETWEEN 0
#endif
static_assert(CALL_BETWEEN == 0 || CALL_BETWEEN == 1, "CALL_BETWEEN must be 0 or 1");

__device__ __noinline__ float bump(float x) { return x * 1.5f + 1.0f; }

// D[64x8] += A[64x16] · B[16x8], f16 in, f32 accumulated: four accumulators per thread.
__device__ __forceinline__ void mma_64x8x16(float (&d)[4], unsigned long long desc_a, unsigned long long desc_b) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%0, %1, %2, %3}, %4, %5, 1, 1, 1, 0, 0;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "l"(desc_a), "l"(desc_b));
}

extern "C" __global__ void wgmma_pair(float* __restrict__ out, int n) {
  __shared__ __align__(128) unsigned short tile[64 * 16 + 16 * 8];
  // Shared-memory matrix descriptors: the start address in 16-byte units (bits 0-13), nothing else.
  const unsigned long long base = (static_cast<unsigned>(__cvta_generic_to_shared(tile)) >> 4) & 0x3FFF;
  const unsigned long long desc_a = base, desc_b = base + 64 * 16 * 2 / 16;
  float d[4] = {0, 0, 0, 0};
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
  mma_64x8x16(d, desc_a, desc_b);
#if CALL_BETWEEN  // knob CALL_BETWEEN=1: a call that reads and redefines an accumulator mid-pipeline
  d[0] = bump(d[0]);
#endif
  mma_64x8x16(d, desc_a + 2, desc_b);
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
  if (static_cast<int>(threadIdx.x) < n) out[threadIdx.x] = d[0] + d[1] + d[2] + d[3];
}

// The profile's reference (a profile must have one): never launched by the tests.
extern "C" __global__ void wgmma_pair_ref(float* __restrict__ out, int n) {
  if (static_cast<int>(threadIdx.x) < n) out[threadIdx.x] = 0.0f;
}
