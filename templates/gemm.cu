// FP16 GEMM on tensor cores (WMMA 16x16x16, f32 accumulation):  C[M,N] = A[M,K] · B[K,N]
//   A: [M, K] f16 row-major    B: [K, N] f16 row-major    C: [M, N] f32 row-major
//
// One block computes a BLOCK_M x BLOCK_N tile of C, walking K in steps of BLOCK_K. Its
// WARPS_M x WARPS_N warps split the tile; each warp owns a (BLOCK_M/WARPS_M) x (BLOCK_N/WARPS_N)
// sub-tile held as FRAG_M x FRAG_N accumulator fragments. A and B tiles go through a ring of
// STAGES shared-memory buffers, filled either by cp.async (USE_CP_ASYNC=1: the copies of the next
// STAGES-1 tiles are in flight while this one is multiplied) or by plain 16-byte loads
// (USE_CP_ASYNC=0: with STAGES=2 the next tile waits in registers while this one is multiplied).
//
// The problem sizes must be multiples of the tile sizes (the profile's constraints say so): there
// are no bounds checks. Launch: grid (N / BLOCK_N, M / BLOCK_M), block WARPS_M * WARPS_N * 32,
// dynamic shared memory GEMM_SMEM_BYTES (the profile's launch.shared_bytes is the same formula).
#include <cuda_fp16.h>  // defines: __half
#include <mma.h>        // defines: nvcuda::wmma fragments, load/store_matrix_sync, mma_sync

// ---- knobs (evo passes each as -DNAME=value; the defaults are the profile's baseline) ----------
#ifndef BLOCK_M
#define BLOCK_M 64       // rows of C per block
#endif
#ifndef BLOCK_N
#define BLOCK_N 64       // columns of C per block
#endif
#ifndef BLOCK_K
#define BLOCK_K 32       // depth of one shared-memory tile
#endif
#ifndef WARPS_M
#define WARPS_M 2        // warps along M
#endif
#ifndef WARPS_N
#define WARPS_N 2        // warps along N
#endif
#ifndef STAGES
#define STAGES 2         // shared-memory buffers in the ring (pipeline depth)
#endif
#ifndef USE_CP_ASYNC
#define USE_CP_ASYNC 1   // 1: cp.async global->shared copies; 0: plain 16-byte loads and stores
#endif

// ---- derived sizes -------------------------------------------------------------------------
constexpr int WMMA = 16;                        // m16n16k16 fragments
constexpr int THREADS = WARPS_M * WARPS_N * 32;
constexpr int WARP_M = BLOCK_M / WARPS_M;       // rows of C per warp
constexpr int WARP_N = BLOCK_N / WARPS_N;       // columns of C per warp
constexpr int FRAG_M = WARP_M / WMMA;           // accumulator fragments per warp along M
constexpr int FRAG_N = WARP_N / WMMA;           // ... and along N
// Rows padded by 8 halves (16 bytes): consecutive rows start 4 banks apart, so the 16-byte
// copies and the fragment loads of 8 rows hit 8 different bank groups. ldm stays a multiple of
// 8 halves and 16-row fragment offsets stay 32-byte aligned, as WMMA requires.
constexpr int PAD = 8;
constexpr int LDA = BLOCK_K + PAD;              // A tile: [BLOCK_M][LDA] halves
constexpr int LDB = BLOCK_N + PAD;              // B tile: [BLOCK_K][LDB] halves
constexpr int A_STAGE = BLOCK_M * LDA;          // halves per stage
constexpr int B_STAGE = BLOCK_K * LDB;
constexpr int CHUNK = 8;                        // halves per 16-byte copy
constexpr int A_CHUNKS = BLOCK_M * BLOCK_K / CHUNK;
constexpr int B_CHUNKS = BLOCK_K * BLOCK_N / CHUNK;
constexpr int A_PER_THREAD = (A_CHUNKS + THREADS - 1) / THREADS;
constexpr int B_PER_THREAD = (B_CHUNKS + THREADS - 1) / THREADS;
// Dynamic shared memory of one block; profiles/gemm_fp16.json launch.shared_bytes says the same.
constexpr int GEMM_SMEM_BYTES = STAGES * (A_STAGE + B_STAGE) * (int)sizeof(__half);

// ---- illegal combinations ------------------------------------------------------------------
static_assert(BLOCK_M % (WMMA * WARPS_M) == 0, "BLOCK_M must be a multiple of 16*WARPS_M");
static_assert(BLOCK_N % (WMMA * WARPS_N) == 0, "BLOCK_N must be a multiple of 16*WARPS_N");
static_assert(BLOCK_K % WMMA == 0, "BLOCK_K must be a multiple of 16");
static_assert(STAGES >= 1 && STAGES <= 3, "STAGES must be 1, 2 or 3");
static_assert(USE_CP_ASYNC == 0 || USE_CP_ASYNC == 1, "USE_CP_ASYNC must be 0 or 1");
static_assert(USE_CP_ASYNC == 1 || STAGES <= 2,
              "STAGES=3 needs USE_CP_ASYNC=1 (plain loads keep only one tile in flight)");
static_assert(THREADS <= 1024, "WARPS_M*WARPS_N must be at most 32");
static_assert(FRAG_M * FRAG_N <= 16,
              "BLOCK_M*BLOCK_N/(WARPS_M*WARPS_N) must be at most 16*256 (more accumulators spill)");

namespace wmma = nvcuda::wmma;

// ---- global -> shared copies -----------------------------------------------------------------
// 16-byte asynchronous copy (sm_80+): the data lands in shared memory without passing registers.
__device__ __forceinline__ void cp_async_16(void* smem, const void* gmem) {
  unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>  // wait until at most N committed groups are still in flight
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Chunk c of a tile: its row and column (in halves) in a [rows][cols] tile.
template <int COLS>
__device__ __forceinline__ int chunk_row(int c) { return c / (COLS / CHUNK); }
template <int COLS>
__device__ __forceinline__ int chunk_col(int c) { return c % (COLS / CHUNK) * CHUNK; }

// The A and B tiles of K-step kt: A[m0 : m0+BLOCK_M, k0 : k0+BLOCK_K], B[k0 : k0+BLOCK_K, n0 : n0+BLOCK_N].
struct TileSource {
  const __half* A;  // at row m0, column 0
  const __half* B;  // at row 0, column n0
  int N, K;
  __device__ const __half* a(int kt, int c) const {
    return A + (size_t)chunk_row<BLOCK_K>(c) * K + kt * BLOCK_K + chunk_col<BLOCK_K>(c);
  }
  __device__ const __half* b(int kt, int c) const {
    return B + (size_t)(kt * BLOCK_K + chunk_row<BLOCK_N>(c)) * N + chunk_col<BLOCK_N>(c);
  }
};
__device__ __forceinline__ __half* a_smem(__half* sA, int c) { return sA + chunk_row<BLOCK_K>(c) * LDA + chunk_col<BLOCK_K>(c); }
__device__ __forceinline__ __half* b_smem(__half* sB, int c) { return sB + chunk_row<BLOCK_N>(c) * LDB + chunk_col<BLOCK_N>(c); }

// USE_CP_ASYNC=1: issue the copies of tile kt into one stage (the caller commits the group).
__device__ __forceinline__ void copy_tile_async(const TileSource& src, int kt, __half* sA, __half* sB) {
#pragma unroll
  for (int i = 0; i < A_PER_THREAD; ++i) {
    int c = threadIdx.x + i * THREADS;
    if (A_CHUNKS % THREADS == 0 || c < A_CHUNKS) cp_async_16(a_smem(sA, c), src.a(kt, c));
  }
#pragma unroll
  for (int i = 0; i < B_PER_THREAD; ++i) {
    int c = threadIdx.x + i * THREADS;
    if (B_CHUNKS % THREADS == 0 || c < B_CHUNKS) cp_async_16(b_smem(sB, c), src.b(kt, c));
  }
}

// USE_CP_ASYNC=0: tile kt into registers, then registers into one stage.
struct TileRegs {
  uint4 a[A_PER_THREAD];
  uint4 b[B_PER_THREAD];
};
__device__ __forceinline__ void load_tile_regs(const TileSource& src, int kt, TileRegs& r) {
#pragma unroll
  for (int i = 0; i < A_PER_THREAD; ++i) {
    int c = threadIdx.x + i * THREADS;
    if (A_CHUNKS % THREADS == 0 || c < A_CHUNKS) r.a[i] = *reinterpret_cast<const uint4*>(src.a(kt, c));
  }
#pragma unroll
  for (int i = 0; i < B_PER_THREAD; ++i) {
    int c = threadIdx.x + i * THREADS;
    if (B_CHUNKS % THREADS == 0 || c < B_CHUNKS) r.b[i] = *reinterpret_cast<const uint4*>(src.b(kt, c));
  }
}
__device__ __forceinline__ void store_tile_regs(const TileRegs& r, __half* sA, __half* sB) {
#pragma unroll
  for (int i = 0; i < A_PER_THREAD; ++i) {
    int c = threadIdx.x + i * THREADS;
    if (A_CHUNKS % THREADS == 0 || c < A_CHUNKS) *reinterpret_cast<uint4*>(a_smem(sA, c)) = r.a[i];
  }
#pragma unroll
  for (int i = 0; i < B_PER_THREAD; ++i) {
    int c = threadIdx.x + i * THREADS;
    if (B_CHUNKS % THREADS == 0 || c < B_CHUNKS) *reinterpret_cast<uint4*>(b_smem(sB, c)) = r.b[i];
  }
}

// ---- one shared-memory tile times the warp's accumulators --------------------------------------
using AccFrag = wmma::fragment<wmma::accumulator, WMMA, WMMA, WMMA, float>;

// acc[i][j] += A_tile[warp rows i] · B_tile[warp columns j], over the tile's BLOCK_K depth. The
// warp's B fragments are held for a k-step; A fragments are loaded one at a time (fewer registers).
__device__ __forceinline__ void mma_tile(const __half* sA, const __half* sB, int warp_m, int warp_n,
                                         AccFrag (&acc)[FRAG_M][FRAG_N]) {
#pragma unroll
  for (int kk = 0; kk < BLOCK_K; kk += WMMA) {
    wmma::fragment<wmma::matrix_b, WMMA, WMMA, WMMA, __half, wmma::row_major> b[FRAG_N];
#pragma unroll
    for (int j = 0; j < FRAG_N; ++j)
      wmma::load_matrix_sync(b[j], sB + kk * LDB + warp_n * WARP_N + j * WMMA, LDB);
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i) {
      wmma::fragment<wmma::matrix_a, WMMA, WMMA, WMMA, __half, wmma::row_major> a;
      wmma::load_matrix_sync(a, sA + (warp_m * WARP_M + i * WMMA) * LDA + kk, LDA);
#pragma unroll
      for (int j = 0; j < FRAG_N; ++j) wmma::mma_sync(acc[i][j], a, b[j], acc[i][j]);
    }
  }
}

// ---- the kernel ----------------------------------------------------------------------------------
extern "C" __global__ void __launch_bounds__(THREADS)
gemm_fp16(const __half* A, const __half* B, float* C, int M, int N, int K) {
  extern __shared__ __align__(128) unsigned char smem_raw[];
  __half* smem = reinterpret_cast<__half*>(smem_raw);
  auto sA = [&](int stage) { return smem + stage * (A_STAGE + B_STAGE); };            // [BLOCK_M][LDA]
  auto sB = [&](int stage) { return smem + stage * (A_STAGE + B_STAGE) + A_STAGE; };  // [BLOCK_K][LDB]

  const int m0 = blockIdx.y * BLOCK_M, n0 = blockIdx.x * BLOCK_N;
  const int warp = threadIdx.x / 32;
  const int warp_m = warp / WARPS_N, warp_n = warp % WARPS_N;
  const TileSource src{A + (size_t)m0 * K, B + n0, N, K};
  const int KT = K / BLOCK_K;  // K-steps

  AccFrag acc[FRAG_M][FRAG_N];
#pragma unroll
  for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
    for (int j = 0; j < FRAG_N; ++j) wmma::fill_fragment(acc[i][j], 0.0f);

#if USE_CP_ASYNC  // knob USE_CP_ASYNC=1: cp.async ring of STAGES buffers
  if constexpr (STAGES == 1) {  // knob STAGES=1: copy, wait, multiply, one tile at a time
    for (int kt = 0; kt < KT; ++kt) {
      copy_tile_async(src, kt, sA(0), sB(0));
      cp_async_commit();
      cp_async_wait<0>();
      __syncthreads();  // every thread's copies have landed
      mma_tile(sA(0), sB(0), warp_m, warp_n, acc);
      __syncthreads();  // every warp is done reading before the next copy overwrites
    }
  } else {  // knob STAGES=2,3: tiles kt+1 .. kt+STAGES-1 are in flight while tile kt is multiplied
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
      if (s < KT) copy_tile_async(src, s, sA(s), sB(s));
      cp_async_commit();  // one group per tile, empty ones too: the wait counts stay uniform
    }
    for (int kt = 0; kt < KT; ++kt) {
      cp_async_wait<STAGES - 2>();  // this thread's copies of tile kt have landed
      __syncthreads();              // everyone's have, and everyone is done with tile kt-1
      const int next = kt + STAGES - 1;  // refill the stage tile kt-1 used
      if (next < KT) copy_tile_async(src, next, sA(next % STAGES), sB(next % STAGES));
      cp_async_commit();
      mma_tile(sA(kt % STAGES), sB(kt % STAGES), warp_m, warp_n, acc);
    }
    cp_async_wait<0>();  // no copy may outlive the block
  }
#else  // knob USE_CP_ASYNC=0: plain 16-byte loads through registers
  TileRegs regs;
  if constexpr (STAGES == 1) {  // knob STAGES=1: load, store, multiply, one tile at a time
    for (int kt = 0; kt < KT; ++kt) {
      load_tile_regs(src, kt, regs);
      store_tile_regs(regs, sA(0), sB(0));
      __syncthreads();
      mma_tile(sA(0), sB(0), warp_m, warp_n, acc);
      __syncthreads();
    }
  } else {  // knob STAGES=2: tile kt+1 waits in registers while tile kt is multiplied
    load_tile_regs(src, 0, regs);
    store_tile_regs(regs, sA(0), sB(0));
    __syncthreads();
    for (int kt = 0; kt < KT; ++kt) {
      if (kt + 1 < KT) load_tile_regs(src, kt + 1, regs);  // global loads in flight during the MMAs
      mma_tile(sA(kt % 2), sB(kt % 2), warp_m, warp_n, acc);
      if (kt + 1 < KT) store_tile_regs(regs, sA((kt + 1) % 2), sB((kt + 1) % 2));
      __syncthreads();  // tile kt+1 stored by everyone; everyone done reading tile kt
    }
  }
#endif

  // Epilogue: each accumulator fragment straight to C (f32 row-major, ldm N).
  float* c_warp = C + (size_t)(m0 + warp_m * WARP_M) * N + n0 + warp_n * WARP_N;
#pragma unroll
  for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
    for (int j = 0; j < FRAG_N; ++j)
      wmma::store_matrix_sync(c_warp + (size_t)i * WMMA * N + j * WMMA, acc[i][j], N, wmma::mem_row_major);
}
