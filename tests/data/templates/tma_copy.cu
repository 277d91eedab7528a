// Y = X through a TMA tensor map: the test kernel of evo's tensor_maps (tests/data/profiles/tma_copy.json).
//   X: [ROWS, 64] f16, described by a 2-D tensor map (dims {64, ROWS}, box {64, 16}, innermost first)
//   Y: [cdiv(ROWS, 16) * 16, 64] f16; block b copies rows 16b .. 16b + 15
// Each block loads its box into shared memory with one cp.async.bulk.tensor, counted by an mbarrier,
// and writes it out. Rows past ROWS arrive as zeros (the map's out-of-bounds fill), so Y's tail is
// zero: the test checks Y is X followed by zeros. Needs sm_90 (Hopper's bulk tensor copy).
//
// knob SWIZZLE: 0 reads x_map (no swizzle); 128 reads x_map_sw128, whose box lands in shared memory
// in the 128-byte swizzle (16-byte chunk c of row r stored at chunk c ^ (r % 8)), undone here.
#ifndef SWIZZLE
#define SWIZZLE 0
#endif
static_assert(SWIZZLE == 0 || SWIZZLE == 128, "SWIZZLE must be 0 or 128");

constexpr int COLS = 64;                           // f16 per row: 128 bytes, eight 16-byte chunks
constexpr int BOX_ROWS = 16;
constexpr unsigned BOX_BYTES = COLS * BOX_ROWS * 2;  // what the mbarrier waits for, zero fill included

// A CUtensorMap as the kernel receives it: 128 opaque bytes, encoded on the host.
struct alignas(64) TmaMap {
  unsigned long long opaque[16];
};

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

extern "C" __global__ void tma_copy(const __grid_constant__ TmaMap x_map, const __grid_constant__ TmaMap x_map_sw128,
                                    unsigned char* __restrict__ Y, int rows) {
  // The 128-byte swizzle is a function of the shared address: a 1024-byte aligned box makes it
  // the row-relative pattern above.
  __shared__ __align__(1024) unsigned char box[BOX_BYTES];
  __shared__ __align__(8) unsigned long long bar;
  const TmaMap& map = SWIZZLE == 128 ? x_map_sw128 : x_map;
  const unsigned bar_s = smem_u32(&bar);
  const int row0 = blockIdx.x * BOX_ROWS;

  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar_s) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the async proxy
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    // One arrival (this thread's) plus BOX_BYTES of transactions complete the phase.
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar_s), "r"(BOX_BYTES) : "memory");
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n"
        ::"r"(smem_u32(box)), "l"(reinterpret_cast<unsigned long long>(&map)), "r"(0), "r"(row0), "r"(bar_s)
        : "memory");
  }
  unsigned done = 0;
  while (!done)  // phase 0 of the barrier: the box has landed
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar_s) : "memory");

  for (int i = threadIdx.x; i < BOX_ROWS * 8; i += blockDim.x) {
    const int r = i / 8, c = i % 8;                  // row of the box, 16-byte chunk of the row
    const int from = SWIZZLE == 128 ? c ^ (r % 8) : c;  // knob SWIZZLE=128: where the TMA put chunk c
    const uint4 v = *reinterpret_cast<const uint4*>(box + r * 128 + from * 16);
    *reinterpret_cast<uint4*>(Y + (static_cast<long long>(row0 + r) * COLS) * 2 + c * 16) = v;
  }
}
