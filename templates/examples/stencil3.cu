// Example of a profile checked by a NumPy script (docs/profiles.md "reference.command",
// profiles/stencil3.json, reference templates/examples/stencil3_ref.py): a 3-point stencil,
//   Y[i] = w0 * X[i-1] + w1 * X[i] + w2 * X[i+1],
// the ends clamped (X[-1] is X[0], X[N] is X[N-1]). Each thread handles ITEMS elements, BLOCK apart.
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif

extern "C" __global__ void __launch_bounds__(BLOCK) stencil3(const float* X, float* Y, float w0, float w1, float w2,
                                                              int N) {
  const int base = blockIdx.x * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {  // knob ITEMS: elements per thread
    const int i = base + k * BLOCK;
    if (i >= N) return;
    const float left = X[i > 0 ? i - 1 : 0];
    const float right = X[i + 1 < N ? i + 1 : N - 1];
    Y[i] = w0 * left + w1 * X[i] + w2 * right;
  }
}
