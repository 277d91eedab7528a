// Example for an `inout` buffer (docs/profiles.md, profiles/accumulate.json): Y += alpha * X, an
// accumulating kernel evo cannot check by poisoning its output. Two more outputs show per-buffer
// thresholds and exact integer comparison: H = X * X (f32, its own tolerance in the profile) and
// POS = 1 where X > 0 (i32, compared exactly). Each thread handles ITEMS elements, BLOCK apart.
//
// PLANT (tests only, default 0) selects a deliberate bug: 1 adds alpha * X twice, 2 counts one
// element of POS wrong, 3 errs H by 1e-3 (inside H's own atol), 4 errs H by 0.1 (outside it).
#ifndef BLOCK
#define BLOCK 256
#endif
#ifndef ITEMS
#define ITEMS 1
#endif
#ifndef PLANT
#define PLANT 0
#endif

extern "C" __global__ void __launch_bounds__(BLOCK) accumulate(const float* X, float* Y, float* H, int* POS, float alpha,
                                                                int N) {
  const int base = blockIdx.x * BLOCK * ITEMS + threadIdx.x;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = base + k * BLOCK;
    if (i >= N) return;
    const float x = X[i];
    Y[i] += alpha * x;
    if (PLANT == 1) Y[i] += alpha * x;
    float h = x * x;
    if (PLANT == 3) h += 1e-3f;
    if (PLANT == 4) h += 0.1f;
    H[i] = h;
    POS[i] = (x > 0.0f ? 1 : 0) + (PLANT == 2 && i == 7 ? 1 : 0);
  }
}
