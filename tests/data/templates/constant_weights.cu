// GREEN's own safety (issue 34): a weighted window sum whose weights live in __constant__ memory
// and are drawn per seed, as Kernel Tuner's convolution keeps its filter. Correct for PLANT=0 at
// every BLOCK and ITEMS; each other PLANT is a kernel that must not fool the judge:
//   1 a store to an unmapped address                         -> crash (illegal address)
//   2 writes 1 MiB past the end of `out` (a grid that covers more than n, unguarded: the tail
//     threads store their sums past the buffer), the n outputs right -> rejected, out named
//   3 writes 4 KiB before the start of `out`, outputs right    -> rejected, out named
//   4 writes into its input `in`                                -> rejected, in named
//   5 a store far past `out` (64 MiB), outputs right: past any guard zone, into whatever
//     allocation lies there (or unmapped: then a crash)         -> never a later candidate's verdict
// out[i] = sum_k in[(i + k) % n] * weights[k], k < TAPS; one thread per ITEMS consecutive outputs.
#ifndef BLOCK
#define BLOCK 128
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef PLANT
#define PLANT 0
#endif
#define TAPS 32
__constant__ float weights[TAPS];

extern "C" __global__ void weighted_window(float* out, float* in, int n) {
  const long long first = ((long long)blockIdx.x * BLOCK + threadIdx.x) * ITEMS;
  for (int it = 0; it < ITEMS; ++it) {
    const long long i = first + it;
    float sum = 0.f;
    for (int k = 0; k < TAPS; ++k) sum += in[(i + k) % n] * weights[k];
#if PLANT == 2  // planted: the tail's stores are not bounded by n (1 MiB of them lands past out)
    if (i < n + (1 << 18)) out[i] = sum;
#else
    if (i < n) out[i] = sum;
#endif
  }
#if PLANT == 1  // planted: a store 4 TB past out, outside any allocation
  if (first == 0) out[(size_t)1 << 40] = 1.f;
#elif PLANT == 3  // planted: 1024 floats before out
  if (first < 1024) out[first - 1024] = 7.f;
#elif PLANT == 4  // planted: the last input element overwritten (the outputs that read it may or may
                  // not see the new value: either way the write itself is the verdict)
  if (first == 0) in[n - 1] = -1.f;
#elif PLANT == 5  // planted: 64 MiB past out
  if (first == 0) out[n + (16 << 20)] = 3.f;
#endif
}
