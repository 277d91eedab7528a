// evo's reference for Kernel Tuner's point-in-polygon example: the crossing number (even-odd
// rule) of each point against a polygon of VERTICES vertices held in __constant__ memory, as in
// Sunday (2001). One thread per point, the plainest form of the test.
#ifndef VERTICES
#define VERTICES 600
#endif
__constant__ float2 d_vertices[VERTICES];

extern "C" __global__ void pnpoly_ref(int* bitmap, const float2* points, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float2 p = points[i];
  int inside = 0;
  for (int j = 0, k = VERTICES - 1; j < VERTICES; k = j++) {
    const float2 vj = d_vertices[j], vk = d_vertices[k];
    const bool straddles = (vj.y > p.y) != (vk.y > p.y);
    if (straddles) {
      const float slope = (vk.x - vj.x) / (vk.y - vj.y);
      if (p.x < slope * (p.y - vj.y) + vj.x) inside = !inside;
    }
  }
  bitmap[i] = inside;
}
