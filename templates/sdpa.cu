// templates/sdpa.cu — scaled dot-product attention forward, FlashAttention style, one template.
//
// O[b,h,i,:] = sum_j softmax_j(scale * Q[b,h,i,:]·K[b,h,j,:]) V[b,h,j,:], keys j > i masked when
// causal. Tensors are [B, H, S, HEAD_DIM] contiguous; Q/K/V are fp16 (IN_FP8=0) or fp8 e4m3
// (IN_FP8=1, value = float(x) * descale); O is fp16. All arithmetic after the products is fp32.
//
// One block owns TILE_M query rows of one (b, h) and walks the keys TILE_N at a time, keeping the
// online-softmax state (running max m, running sum l, unnormalised accumulator O):
//     m_new = max(m, rowmax(S));  P = exp2(S - m_new);  alpha = exp2(m - m_new)
//     l = l * alpha + rowsum(P);  O = O * alpha + P·V;  ...  O / l at the end.
// Scores are kept in the log2 domain (scale folded with log2(e)), so exp2 is one MUFU op.
//
// Three code paths (knob MMA_PATH):
//   0: the seed kernels' shape. S, P and O live in shared memory; each product is WMMA
//      (USE_WMMA_QK / USE_WMMA_PV) or scalar FMA; warps share rows through __syncthreads.
//   1: FlashAttention-2 shape. Each compute warp owns 16 or 32 query rows; S, P and O stay in
//      registers; Q·Kᵀ and P·V are mma.sync (fp16 m16n8k16; fp8 Q·Kᵀ m16n8k32 e4m3) fed by ldmatrix;
//      fp8 V is widened to fp16 in registers (no converted copy in shared memory), or with
//      PV_FP8=1 P·V runs as e4m3 m16n8k32 with P quantised to e4m3.
//   2: Hopper warpgroup MMA (fp16 only, -arch=sm_90a). Four consecutive warps (a warpgroup) own 64
//      query rows; Q·Kᵀ is wgmma m64n{TILE_N}k16 with Q and K read from shared memory through
//      descriptors, P·V is wgmma m64n{HEAD_DIM}k16 with P from registers and V from shared memory
//      (transposed B). The accumulators have MMA_PATH=1's fragment layout (warp w of the group: rows
//      16w + g, 16w + g + 8), so the masking, online softmax and epilogue are MMA_PATH=1's code.
//      WG_PIPE=1 overlaps tile j's softmax with tile j-1's P·V inside the warpgroup.
//   3: FlashAttention-3 (Shah et al., 2024), -arch=sm_90a: warp specialisation and asynchrony. A
//      producer warpgroup (setmaxnreg.dec) issues TMA loads of K and V into a STAGES-deep ring of
//      mbarrier-guarded stages and, for fp8, rewrites V for P·V (PV_FP8=1: transposed, so that P·V is
//      an e4m3 wgmma; else widened to fp16); NUM_WARPS/4 consumer warpgroups (setmaxnreg.inc; 1, 2
//      or 3, FlashAttention-3's 192-row tile at D=64) own 64 query rows each and issue Q·K_jᵀ and
//      P_{j-1}·V_{j-1} together. WG_PIPE=1: the softmax of tile j runs under P_{j-1}·V_{j-1}
//      (intra-warpgroup overlap); PINGPONG=1: the consumer warpgroups take turns issuing their
//      products, so one's softmax runs under the others' (inter-warpgroup).
// Around paths 1 and 2: a STAGES-deep K/V ring in shared memory (cp.async, plain loads, or with MMA_PATH=2
// TMA: USE_TMA), optional
// producer warp (WARP_SPEC), optional split of the keys across blocks (SPLIT_KV): the SPLIT_KV
// blocks of a query tile form a thread-block cluster; each 16-row tile has an owner block, and the
// other splits push their partial state of it into the owner's shared memory (st.async, counted by
// an mbarrier), where it is merged in registers (split_exchange).
//
// Launch (see docs/templates.md for the exact shared-memory expression):
//   grid  = (ceil(S / TILE_M), B * H, SPLIT_KV), block = ((NUM_WARPS + WARP_SPEC) * 32, 1, 1),
//   dynamic shared memory = sdpa::SMEM_BYTES (the kernel traps if given less).
// Compiled by NVRTC (or nvcc -arch=sm_90 -c; MMA_PATH=2 needs sm_90a: nvcc -gencode
// arch=compute_90a,code=sm_90a, since -arch=sm_90a adds a plain compute_90 pass); every knob is a -D
// define. SPLIT_KV > 1 fixes the cluster shape at compile time (__cluster_dims__(1, 1, SPLIT_KV)), so an
// ordinary launch (cuLaunchKernel, <<<>>>) runs it as clusters; partial_o, partial_ml and
// split_counter are not used by this exchange and stay in the signature so that every configuration
// keeps one argument list; so do k_map and v_map, the TMA descriptors of K and V (CUtensorMap, encoded
// on the host over [B*H, S, HEAD_DIM] with a box of one 128-byte panel x TILE_N rows and the
// panel's swizzle: evo's profiles list them under tensor_maps), read only with USE_TMA=1. Illegal knob combinations stop at a static_assert naming the knob.

#include <cuda_fp16.h>  // defines: __half, __half2, __floats2half2_rn, __half22float2
#include <cuda_fp8.h>   // defines: __nv_fp8_e4m3, __nv_cvt_fp8x2_to_halfraw2, __nv_cvt_float2_to_fp8x2
#include <mma.h>        // defines: nvcuda::wmma (MMA_PATH=0 tensor-core products)

// ---- fixed by the profile (not searched) ----
#ifndef HEAD_DIM
#define HEAD_DIM 64      // 64 or 128
#endif
#ifndef IN_FP8
#define IN_FP8 0         // 0: fp16 inputs, 1: fp8 e4m3 inputs
#endif

// ---- knobs ----
#ifndef TILE_M
#define TILE_M 64        // query rows per block: 16, 32, 64, 128 (MMA_PATH=3 also 192)
#endif
#ifndef TILE_N
#define TILE_N 64        // key/value rows per step: 16, 32, 64, 128
#endif
#ifndef NUM_WARPS
#define NUM_WARPS 4      // compute warps per block: 2, 4, 8, with MMA_PATH=3 also 12 (WARP_SPEC adds a
                         // producer warp, MMA_PATH=3 a producer warpgroup)
#endif
#ifndef STAGES
#define STAGES 2         // K/V shared-memory ring depth: 1, 2, 3
#endif
#ifndef USE_CP_ASYNC
#define USE_CP_ASYNC 1   // 1: cp.async 16-byte copies, 0: plain 16-byte loads and stores
#endif
#ifndef USE_WMMA_QK
#define USE_WMMA_QK 1    // MMA_PATH=0: 1 tensor cores (WMMA) for Q·Kᵀ, 0 scalar FMA
#endif
#ifndef USE_WMMA_PV
#define USE_WMMA_PV 1    // MMA_PATH=0: 1 tensor cores (WMMA) for P·V, 0 scalar FMA
#endif
#ifndef MMA_PATH
#define MMA_PATH 1       // 0: WMMA/scalar through shared memory, 1: register-resident mma.sync, 2: wgmma (sm_90a)
#endif
#ifndef SWIZZLE
#define SWIZZLE 2        // Q/K/V tile layout: 0 dense rows, 1 rows padded by 16 bytes, 2 XOR swizzle
#endif
#ifndef WARP_SPEC
#define WARP_SPEC 0      // 1: one extra warp (the last) only issues the copies; NUM_WARPS compute
#endif
#ifndef SPLIT_KV
#define SPLIT_KV 1       // blocks that share one query tile's keys: 1, 2, 4
#endif
#ifndef WG_PIPE
#define WG_PIPE 0        // MMA_PATH=2: 1 issues Q·K_jᵀ and P_{j-1}·V_{j-1} together and runs softmax j
                         // while P·V is on the tensor cores (FlashAttention-3's intra-warpgroup overlap)
#endif
#ifndef USE_TMA
#define USE_TMA 0        // MMA_PATH=2: 1 K/V tiles by TMA (one thread issues a whole swizzled tile, an mbarrier
                         // counts its bytes), 0 by every thread's cp.async
#endif
#ifndef MIN_BLOCKS
#define MIN_BLOCKS 1     // blocks per SM the compiler must leave registers for (__launch_bounds__): 2 with
                         // 8 warps or 4 with 4 warps caps a thread at 128 registers
#endif
#ifndef PV_FP8
#define PV_FP8 0         // fp8 inputs, MMA_PATH=1 or 3: 1 P·V as e4m3 x e4m3 (P quantised), 0 as fp16 (V widened)
#endif
#ifndef PINGPONG
#define PINGPONG 0       // MMA_PATH=3 with two or three consumer warpgroups: 1 they take turns issuing their products
#endif
#ifndef LAZY_RESCALE
#define LAZY_RESCALE 0   // MMA_PATH=3: 1 a warp none of whose rows' running max moved in this tile skips O's
                         // rescale (exact: alpha is 1 there), 0 every tile rescales O
#endif
#ifndef ROWSUM_MMA
#define ROWSUM_MMA 0     // MMA_PATH=3 with PV_FP8=1: 1 the softmax's row sums come out of the P·V wgmma (8 rows of
                         // e4m3 ones appended to V's transpose, N = HEAD_DIM + 8: the sum of the e4m3 P that P·V
                         // used), 0 the softmax adds its probabilities (one FADD each)
#endif
#ifndef ITEM_OVERLAP
#define ITEM_OVERLAP 0   // MMA_PATH=3 with PERSIST=1: 1 an item's last P·V and the next item's first Q·Kᵀ go in one turn,
                         // the next item's first softmax runs under that P·V, then the item's epilogue; 0 an item
                         // ends with its last P·V alone and the next starts with its first Q·Kᵀ alone
#endif
#ifndef EXP_BEFORE_MAX
#define EXP_BEFORE_MAX 0 // MMA_PATH=3: 1 a tile's exponentials start from the running max, not waiting for the tile's own
                         // max (which is found beside them); a row whose max rose further than P's range allows has
                         // its probabilities rescaled (and, past what fp32 holds, its scores recomputed); 0 the
                         // tile's max first, then its exponentials
#endif
#ifndef PERSIST
#define PERSIST 0        // MMA_PATH=3: 1 a block per SM walks the query tiles (grid = min(tiles, SMs)), loading the
                         // next tile's Q and K/V while this one finishes; 0 a block per query tile
#endif
#ifndef STREAM_K
#define STREAM_K 0       // MMA_PATH=3 with PERSIST=1, non-causal: 1 each block takes an equal share of all items' key
                         // tiles (an item may end in one block and start in the next: the two halves merge through
                         // partial_o and split_counter), so that the last wave has no idle SMs; 0 whole items, every
                         // gridDim.x-th. Causal problems take whole items either way.
#endif

// ---- not searched: MMA_PATH=2 without WG_PIPE, where Q·K_jᵀ is issued. 1 (default): in block_mma, by
// every warpgroup, active or not (causal: one wasted wgmma per block at most); ptxas then keeps far
// fewer registers live (fp16 64x128: 154 -> 122-128), and fp8 with STAGES>1 needs it anyway (V is
// widened under the wgmma; a wgmma under a branch makes ptxas serialise them all: C7518). 0: inside
// warp_scores, under the warpgroup's `active` branch (the old place; kept for A/B timing).
#ifndef QK_HOISTED
#define QK_HOISTED 1
#endif
#ifndef V_REGS
#define V_REGS 0         // fp8 on wgmma, how V_j reaches its fp16 copy: 1 global -> registers (STAGES=1: with
                         // K_j's copy; STAGES>1: one tile ahead), widened and stored while Q·K_jᵀ runs (no
                         // fp8 staging, STAGES=1: one barrier less a tile); 0 through the ring, then widen_v
#endif

// ---- legal values and combinations (docs/templates.md lists the same rules as constraints) ----
static_assert(HEAD_DIM == 64 || HEAD_DIM == 128, "HEAD_DIM must be 64 or 128");
static_assert(IN_FP8 == 0 || IN_FP8 == 1, "IN_FP8 must be 0 or 1");
static_assert(TILE_M == 16 || TILE_M == 32 || TILE_M == 64 || TILE_M == 128 || (TILE_M == 192 && MMA_PATH == 3),
              "TILE_M must be 16, 32, 64 or 128 (MMA_PATH=3 also takes 192)");
static_assert(TILE_N == 16 || TILE_N == 32 || TILE_N == 64 || TILE_N == 128 || MMA_PATH == 3,
              "TILE_N must be 16, 32, 64 or 128 (MMA_PATH=3 also takes 160, 176, 192 and 224)");
static_assert(NUM_WARPS == 2 || NUM_WARPS == 4 || NUM_WARPS == 8 || (NUM_WARPS == 12 && MMA_PATH == 3),
              "NUM_WARPS must be 2, 4 or 8 (MMA_PATH=3 also takes 12: three consumer warpgroups)");
static_assert(TILE_M % 16 == 0 && TILE_N % 16 == 0, "TILE_M and TILE_N must be multiples of 16 (mma tiles)");
static_assert(STAGES >= 1 && STAGES <= 3, "STAGES must be 1, 2 or 3");
static_assert(USE_CP_ASYNC == 0 || USE_CP_ASYNC == 1, "USE_CP_ASYNC must be 0 or 1");
static_assert(USE_WMMA_QK == 0 || USE_WMMA_QK == 1, "USE_WMMA_QK must be 0 or 1");
static_assert(USE_WMMA_PV == 0 || USE_WMMA_PV == 1, "USE_WMMA_PV must be 0 or 1");
static_assert(MMA_PATH >= 0 && MMA_PATH <= 3, "MMA_PATH must be 0, 1, 2 or 3");
static_assert(SWIZZLE >= 0 && SWIZZLE <= 2, "SWIZZLE must be 0, 1 or 2");
static_assert(WARP_SPEC == 0 || WARP_SPEC == 1, "WARP_SPEC must be 0 or 1");
static_assert(SPLIT_KV == 1 || SPLIT_KV == 2 || SPLIT_KV == 4, "SPLIT_KV must be 1, 2 or 4");
static_assert(PV_FP8 == 0 || (PV_FP8 == 1 && IN_FP8 == 1 && (MMA_PATH == 1 || MMA_PATH == 3) && TILE_N % 32 == 0),
              "PV_FP8=1 needs IN_FP8=1, MMA_PATH=1 or 3, and TILE_N a multiple of 32 (the e4m3 k-step)");
static_assert(USE_CP_ASYNC == 1 || STAGES == 1, "STAGES > 1 needs USE_CP_ASYNC=1 (plain loads are synchronous)");
static_assert(WARP_SPEC == 0 || USE_CP_ASYNC == 1, "WARP_SPEC=1 needs USE_CP_ASYNC=1");
static_assert(MMA_PATH == 0 || (USE_WMMA_QK == 1 && USE_WMMA_PV == 1),
              "MMA_PATH=1 needs USE_WMMA_QK=1 and USE_WMMA_PV=1 (both products on tensor cores)");
static_assert(MMA_PATH == 0 || TILE_M == 16 * NUM_WARPS || TILE_M == 32 * NUM_WARPS,
              "MMA_PATH=1 needs TILE_M = 16 or 32 rows per compute warp (TILE_M = 16 or 32 x NUM_WARPS)");
static_assert(MMA_PATH == 0 || MMA_PATH == 3 || TILE_N * TILE_M <= 128 * 16 * NUM_WARPS,
              "MMA_PATH=1: TILE_N * rows-per-warp must be <= 2048 (score registers)");
static_assert(MMA_PATH != 3 || TILE_N == 32 || TILE_N == 64 || TILE_N == 128 || TILE_N == 160 || TILE_N == 176 ||
                  TILE_N == 192 || TILE_N == 224,
              "MMA_PATH=3 needs TILE_N 32, 64, 128, 160, 176, 192 or 224 (one Q·Kᵀ wgmma per k-step; setmaxnreg's "
              "consumers hold the wider score tiles)");
static_assert(MMA_PATH != 0 || (TILE_N <= TILE_M && TILE_M <= 64 && 8 * NUM_WARPS <= TILE_M),
              "MMA_PATH=0 needs TILE_N <= TILE_M <= 64 and TILE_M >= 8 * NUM_WARPS");
static_assert(MMA_PATH != 0 || (SWIZZLE <= 1 && STAGES <= 2 && SPLIT_KV == 1),
              "MMA_PATH=0 needs SWIZZLE <= 1 (WMMA loads need a plain stride), STAGES <= 2 and SPLIT_KV=1");
static_assert(MMA_PATH != 2 || IN_FP8 == 0 || WG_PIPE == 0,
              "MMA_PATH=2 with IN_FP8=1 needs WG_PIPE=0 (its one fp16 copy of V is rewritten every tile)");
static_assert(MMA_PATH < 2 || (NUM_WARPS % 4 == 0 && TILE_M == 16 * NUM_WARPS),
              "MMA_PATH=2 or 3 needs TILE_M = 64 x (NUM_WARPS/4), NUM_WARPS 4, 8 (or 12 with MMA_PATH=3): one "
              "warpgroup per 64 rows");
static_assert(MMA_PATH < 2 || TILE_N >= 32, "MMA_PATH=2 or 3 needs TILE_N >= 32");
static_assert(MMA_PATH < 2 || SWIZZLE == 2, "MMA_PATH=2 or 3 needs SWIZZLE=2 (the wgmma 128-byte swizzle layout)");
static_assert(MMA_PATH < 2 || WARP_SPEC == 0, "MMA_PATH=2 or 3 needs WARP_SPEC=0 (MMA_PATH=3 has its own producer warpgroup)");
static_assert(USE_TMA == 0 || (USE_TMA == 1 && MMA_PATH >= 2 && USE_CP_ASYNC == 1),
              "USE_TMA=1 needs MMA_PATH=2 or 3 (its tiles are in the TMA's swizzle) and USE_CP_ASYNC=1 (Q still comes by cp.async)");
static_assert(MMA_PATH != 3 || (USE_TMA == 1 && STAGES >= 2 && SPLIT_KV == 1 && MIN_BLOCKS == 1 && V_REGS == 0),
              "MMA_PATH=3 needs USE_TMA=1 (the producer's loads), STAGES >= 2, SPLIT_KV=1, MIN_BLOCKS=1 and V_REGS=0");
static_assert(PINGPONG == 0 || (PINGPONG == 1 && MMA_PATH == 3 && NUM_WARPS >= 8),
              "PINGPONG=1 needs MMA_PATH=3 and NUM_WARPS 8 or 12 (two or three consumer warpgroups)");
static_assert(PERSIST == 0 || (PERSIST == 1 && MMA_PATH == 3), "PERSIST=1 needs MMA_PATH=3");
static_assert(LAZY_RESCALE == 0 || (LAZY_RESCALE == 1 && MMA_PATH == 3), "LAZY_RESCALE=1 needs MMA_PATH=3");
static_assert(STREAM_K == 0 || (STREAM_K == 1 && MMA_PATH == 3 && PERSIST == 1),
              "STREAM_K=1 needs MMA_PATH=3 and PERSIST=1 (a block's share of the items' tiles)");
static_assert(ITEM_OVERLAP == 0 || (ITEM_OVERLAP == 1 && MMA_PATH == 3 && PERSIST == 1),
              "ITEM_OVERLAP=1 needs MMA_PATH=3 and PERSIST=1 (a block's next item)");
static_assert(EXP_BEFORE_MAX == 0 || (EXP_BEFORE_MAX == 1 && MMA_PATH == 3), "EXP_BEFORE_MAX=1 needs MMA_PATH=3");
static_assert(ROWSUM_MMA == 0 || (ROWSUM_MMA == 1 && MMA_PATH == 3 && PV_FP8 == 1),
              "ROWSUM_MMA=1 needs MMA_PATH=3 and PV_FP8=1 (the ones are rows of the transposed e4m3 V)");
static_assert(MIN_BLOCKS == 1 || MIN_BLOCKS == 2 || MIN_BLOCKS == 4, "MIN_BLOCKS must be 1, 2 or 4");
static_assert(V_REGS == 0 || (V_REGS == 1 && MMA_PATH == 2 && IN_FP8 == 1 && QK_HOISTED && WG_PIPE == 0),
              "V_REGS=1 needs MMA_PATH=2 with IN_FP8=1 (the widened V copy) and Q·Kᵀ issued in block_mma");
static_assert(WG_PIPE == 0 || (WG_PIPE == 1 && MMA_PATH == 2 && STAGES == 3) || (WG_PIPE == 1 && MMA_PATH == 3),
              "WG_PIPE=1 needs MMA_PATH=2 and STAGES=3 (one ring stage of slack for the P·V in flight), or MMA_PATH=3");
#if SPLIT_KV > 1 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "SPLIT_KV > 1 needs sm_90 or newer (thread-block clusters combine the splits)"
#endif
#if MMA_PATH >= 2 && defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "MMA_PATH=2 and 3 need -arch=sm_90a (wgmma)"
#endif

// MMA_PATH=3's epilogue stores O 16 bytes a thread (after a transpose within each quad), the other paths 4 or 8.
#define O_WIDE (MMA_PATH == 3)

#if IN_FP8
typedef __nv_fp8_e4m3 IN_T;
#else
typedef __half IN_T;
#endif

#ifdef SDPA_TRACE  // diagnostics, not a knob (bench/timeline.py): clock64() stamps of MMA_PATH=3's steps, thread 0 of
// every warpgroup of the blocks with a linear index below SDPA_TRACE; [block][warpgroup][ring position][event]
extern "C" {  // (a definition with C linkage: bench/timeline.py finds it by this name)
__device__ unsigned long long sdpa_trace[SDPA_TRACE][4][64][8];
}
#endif

namespace sdpa {

// ---- derived constants ----
constexpr float LOG2E   = 1.4426950408889634f;     // exp(x) = exp2(x * log2(e))
constexpr int NT        = (NUM_WARPS + (MMA_PATH == 3 ? 4 : WARP_SPEC)) * 32;  // threads per block (MMA_PATH=3:
                                                   // + the producer warpgroup)
constexpr int CW        = NUM_WARPS;               // compute warps (WARP_SPEC=1: warp CW copies)
constexpr int CT        = CW * 32;                 // compute threads (always threads 0 .. CT-1)
constexpr int ESZ       = IN_FP8 ? 1 : 2;          // bytes per input element
constexpr int RB_IN     = HEAD_DIM * ESZ;          // bytes per row of a raw Q/K/V tile
constexpr int RB_H      = HEAD_DIM * 2;            // bytes per row of an fp16 tile
constexpr int PADB      = SWIZZLE == 1 ? 16 : 0;   // SWIZZLE=1 row padding
constexpr int RS_IN     = RB_IN + PADB;            // smem row stride of a raw tile
constexpr int RS_H      = RB_H + PADB;             // smem row stride of an fp16 tile
constexpr int PD        = STAGES - 1 - WG_PIPE;    // tiles in flight ahead of the one computed
                                                   // (WG_PIPE=1: V_{j-1} is still read during tile j)
constexpr int CONV_BUFS = WARP_SPEC || MMA_PATH == 3 ? STAGES : 1;  // fp8 -> fp16 converted K/V tiles
constexpr bool NEED_KH  = IN_FP8 && MMA_PATH == 0 && USE_WMMA_QK;        // WMMA has no e4m3
constexpr bool NEED_VH  = IN_FP8 && ((MMA_PATH == 0 && USE_WMMA_PV)     // WMMA P·V runs in fp16
                                     || MMA_PATH == 2                    // so does wgmma's (e4m3 B must be K-major)
                                     || (MMA_PATH == 3 && !PV_FP8));     // (MMA_PATH=3: a ring of them)
constexpr bool NEED_VT  = MMA_PATH == 3 && PV_FP8;  // MMA_PATH=3, PV_FP8=1: a ring of transposed fp8 V tiles
// (MMA_PATH=1 widens fp8 V to fp16 in registers, after ldmatrix: see warp_pv)
constexpr int PF = SWIZZLE == 1 ? 4 : 0;           // MMA_PATH=0 float row padding
constexpr int PH = SWIZZLE == 1 ? 8 : 0;           // MMA_PATH=0 half row padding
constexpr int LDS = TILE_N + PF;                   // sS row stride (floats)
constexpr int LDP = TILE_N + PH;                   // sP row stride (halves)
constexpr int LDO = HEAD_DIM + PF;                 // sO row stride (floats)

// MMA_PATH=1 (and 2) register tiling
constexpr int WM  = TILE_M / CW;                   // query rows per compute warp
constexpr int MT  = WM / 16;                       // 16-row mma tiles per warp
constexpr int NTN = TILE_N / 8;                    // 8-key score tiles
constexpr int NTD = HEAD_DIM / 8;                  // 8-column output tiles
constexpr int KS  = RB_IN / 32;                    // Q·Kᵀ k-steps of 32 bytes (16 fp16 / 32 fp8)
constexpr bool Q_IN_REGS = MMA_PATH < 2 && MT * RB_IN <= 256;  // else Q fragments are re-read from smem
                                                   // (MMA_PATH=2: wgmma reads Q from smem itself)
// PV_FP8=1: P is quantised to e4m3 as P * 2^P_SHIFT (<= 256 < 448), which keeps the small
// probabilities out of e4m3's subnormals; l carries the same factor, so O / l is unchanged.
constexpr float P_SHIFT = PV_FP8 ? 8.f : 0.f;
// knob EXP_BEFORE_MAX=1 with e4m3 P: a row's reference (ws.m) is set 2^P_HEADROOM above its max, so that the max may
// rise by P_HEADROOM + 0.75 before P leaves e4m3's range and the row is rescaled (set at the max, 44 % of a warp's
// steps would rescale on Gaussian scores, and the knob gained 2 % where it could gain 7 %: docs/results/sdpa-fa3.md).
// P's top is then 2^7, and its subnormals start 2^-13 below it rather than 2^-14.
constexpr float P_HEADROOM = EXP_BEFORE_MAX && PV_FP8 ? 1.f : 0.f;

// ---- shared-memory layout (bytes; every section is a multiple of 32: WMMA pointers need 32-byte alignment) ----
constexpr int RS_Q   = MMA_PATH >= 1 ? RS_IN : RS_H;   // MMA_PATH=0 keeps Q as fp16
constexpr int Q_BUFS = PERSIST ? 2 : 1;           // PERSIST=1: the next query tile's Q loads into the other
constexpr int OFF_Q  = 0;
constexpr int OFF_K  = OFF_Q + Q_BUFS * TILE_M * RS_Q;
constexpr int OFF_V  = OFF_K + STAGES * TILE_N * RS_IN;
constexpr int OFF_KH = OFF_V + (V_REGS ? 0 : STAGES * TILE_N * RS_IN);  // (V_REGS=1: V has no ring stages)
constexpr int OFF_VH = OFF_KH + (NEED_KH ? CONV_BUFS * TILE_N * RS_H : 0);
constexpr int OFF_VT = OFF_VH + (NEED_VH ? CONV_BUFS * TILE_N * RS_H : 0);
constexpr int VT_ROWS = HEAD_DIM + (ROWSUM_MMA ? 8 : 0);  // rows of a transposed V tile (ROWSUM_MMA: + 8 of ones)
constexpr int VT_STAGE_BYTES = TILE_N * VT_ROWS;          // one transposed e4m3 tile
constexpr int OFF_S  = OFF_VT + (NEED_VT ? STAGES * VT_STAGE_BYTES : 0);
constexpr int OFF_P  = OFF_S + (MMA_PATH == 0 ? TILE_M * LDS * 4 : 0);
constexpr int OFF_O  = OFF_P + (MMA_PATH == 0 && USE_WMMA_PV ? TILE_M * LDP * 2 : 0);
constexpr int OFF_M  = OFF_O + (MMA_PATH == 0 ? TILE_M * LDO * 4 : 0);
constexpr int OFF_L  = OFF_M + (MMA_PATH == 0 ? TILE_M * 4 : 0);
constexpr int OFF_BAR = OFF_L + (MMA_PATH == 0 ? TILE_M * 4 : 0);    // MMA_PATH=3: the ring's mbarriers
constexpr int MAIN_BYTES = OFF_BAR + (MMA_PATH == 3 ? 256 + 32 * STREAM_K : 0);  // (STREAM_K=1: its share's bounds)
constexpr int OFF_PROBLEM = OFF_BAR + 160;  // MMA_PATH=3: the problem (Fa3Problem), after the mbarriers
// SPLIT_KV>1 (MMA_PATH 1 or 2): the mailbox where the other splits' partial states of the 16-row tiles
// this block owns arrive (split_exchange), after everything above so that it is free from the start,
// then the mbarrier that counts their bytes. A partial is one warp's registers for one 16-row tile:
// per lane NTD float4 of O and one float4 (m, m, l, l), stored as [float4 index][lane].
constexpr int NRT        = TILE_M / 16;                              // 16-row tiles of the query tile
constexpr int OWNED      = NRT >= SPLIT_KV ? NRT / SPLIT_KV : 1;     // row tiles a block owns (at most)
constexpr int PART_F4    = NTD + 1;                                  // float4 per lane of one partial
constexpr int PART_BYTES = 32 * PART_F4 * 16;
constexpr int OFF_MAIL   = MAIN_BYTES;
constexpr int MAIL_BYTES = SPLIT_KV > 1 ? (SPLIT_KV - 1) * OWNED * PART_BYTES + 16 : 0;  // + the mbarrier
// MMA_PATH=2, 3: + 1024 so that the kernel can round its base up to the 1024 bytes the swizzle atoms need
constexpr int SMEM_BYTES = MAIN_BYTES + MAIL_BYTES + (MMA_PATH >= 2 ? 1024 : 0);
static_assert(2 * STAGES * 8 <= 64, "USE_TMA=1: the ring's mbarriers must fit the 64 bytes they are given");
static_assert(SMEM_BYTES <= 227 * 1024, "shared memory over 227 KB: lower STAGES, TILE_N or TILE_M");
#ifdef SDPA_EXPECT_SMEM_BYTES  // tests: a profile's launch.shared_bytes must be exactly this (less traps, more wastes)
static_assert(SMEM_BYTES == SDPA_EXPECT_SMEM_BYTES, "the profile's launch.shared_bytes differs from sdpa::SMEM_BYTES");
#endif

// named barriers (0 is __syncthreads)
enum : int {
  BAR_COMPUTE = 1,           // compute warps only (WARP_SPEC=1)
  BAR_FULL    = 2,           // + stage: producer -> consumers, tile landed
  BAR_EMPTY   = 2 + STAGES,  // + stage: consumers -> producer, stage free
};
// MMA_PATH=3's named barriers (its ring is guarded by mbarriers instead: FA3_K_FULL ...)
enum : int {
  BAR_CONSUMERS = 1,         // every consumer thread (the Q tile is in)
  BAR_PRODUCER  = 2,         // the producer warpgroup (a transformed V stage is written)
  BAR_PP        = 3,         // + warpgroup: PINGPONG=1, that consumer warpgroup's turn to issue
};

// ---------------------------------------------------------------------------------------------
// Small device helpers
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

__device__ __forceinline__ float fast_exp2(float x) {  // ex2.approx: exp2(-inf) = +0
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
// Two partial states of one row (SPLIT_KV's splits, STREAM_K's halves) into one: the larger running max, and each
// side's scale to it (a side with no max yet weighs 0).
__device__ __forceinline__ float merge_scales(float ma, float mb, float& sa, float& sb) {
  const float M = fmaxf(ma, mb);
  sa = ma == neg_inf() ? 0.f : fast_exp2(ma - M);
  sb = mb == neg_inf() ? 0.f : fast_exp2(mb - M);
  return M;
}

__device__ __forceinline__ unsigned smem_u32(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void named_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int n) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory");
}
// Barrier among the compute warps only.
__device__ __forceinline__ void compute_sync() {
#if WARP_SPEC  // knob WARP_SPEC=1: the producer warp is not part of compute barriers
  named_sync(BAR_COMPUTE, CT);
#else
  __syncthreads();
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#if USE_CP_ASYNC
  asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
#if USE_CP_ASYNC
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// A CUtensorMap as the kernel receives it: 128 opaque bytes, encoded on the host.
struct alignas(64) TmaMap { unsigned long long opaque[16]; };

// mbarrier and TMA (USE_TMA=1). A barrier counts one arrival (the issuing thread's, with the bytes it
// expects) and the bytes the TMA unit writes; waiting is per phase: the k-th fill of a stage is phase k.
__device__ __forceinline__ void mbar_init(unsigned bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_init_n(unsigned bar, unsigned count) {  // count arrivals a phase
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}
// Box (c0, c1, c2) of a 3-D tensor map -> shared memory at dst, counted by bar. Out-of-bounds
// elements (keys past S of this head) arrive as zeros.
__device__ __forceinline__ void tma_load_3d(unsigned dst, unsigned long long map, int c0, int c1, int c2, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n"
      ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}

// Byte offset of 16-byte chunk c of row r in a tile whose rows hold RB bytes.
template <int RB>
__device__ __forceinline__ int chunk_off(int r, int c) {
#if SWIZZLE == 2    // knob SWIZZLE=2: XOR the chunk with the row, so 8 rows hit 8 bank groups
  constexpr int NC = RB / 16;
  constexpr int ROWS_PER_LINE = NC >= 8 ? 1 : 8 / NC;  // rows sharing one 128-byte line
  constexpr int KEYS = NC >= 8 ? 8 : NC;
  return r * RB + ((c ^ ((r / ROWS_PER_LINE) % KEYS)) << 4);
#elif SWIZZLE == 1  // knob SWIZZLE=1: pad every row by 16 bytes
  return r * (RB + 16) + (c << 4);
#else               // knob SWIZZLE=0: dense rows
  return r * RB + (c << 4);
#endif
}

// Byte offset of 16-byte chunk c of row r in a tile of ROWS rows of RB bytes, as load_tile lays it out.
template <int ROWS, int RB>
__device__ __forceinline__ int tile_off(int r, int c) {
#if MMA_PATH >= 2  // knob MMA_PATH=2 or 3: the wgmma 128-byte swizzle. Columns go in panels of 64 fp16 (128-byte
                   // rows, ROWS * 128 bytes a panel); chunk c & 7 of row r sits at chunk (c & 7) ^ (r & 7).
                   // With HEAD_DIM=64 this is SWIZZLE=2's chunk_off; tiles start 1024-byte aligned.
  if (RB == 64)  // fp8 rows of HEAD_DIM=64: the 64-byte swizzle, chunk c of row r at c ^ ((r / 2) % 4)
    return r * 64 + ((c ^ ((r >> 1) & 3)) << 4);
  return (c >> 3) * (ROWS * 128) + r * 128 + (((c & 7) ^ (r & 7)) << 4);
#else
  return chunk_off<RB>(r, c);
#endif
}

// Two e4m3 values (low byte first) -> half2 bits (exact: every e4m3 value is an fp16 value).
__device__ __forceinline__ unsigned fp8x2_to_h2(unsigned v) {
  __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v & 0xffffu), __NV_E4M3);
  return static_cast<unsigned>(h.x) | (static_cast<unsigned>(h.y) << 16);
}
// 16 e4m3 values -> 16 halves (two 16-byte chunks).
__device__ __forceinline__ void fp8x16_to_h16(uint4 raw, uint4& lo, uint4& hi) {
  lo = make_uint4(fp8x2_to_h2(raw.x), fp8x2_to_h2(raw.x >> 16), fp8x2_to_h2(raw.y), fp8x2_to_h2(raw.y >> 16));
  hi = make_uint4(fp8x2_to_h2(raw.z), fp8x2_to_h2(raw.z >> 16), fp8x2_to_h2(raw.w), fp8x2_to_h2(raw.w >> 16));
}

__device__ __forceinline__ unsigned pack_h2(float a, float b) {
  __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<unsigned*>(&h);
}

// ---------------------------------------------------------------------------------------------
// Global -> shared copies. A tile is ROWS rows of RB bytes, contiguous in global memory;
// rows >= valid are zero-filled (masked keys must meet V = 0, not stale data: 0 * NaN = NaN).
// ---------------------------------------------------------------------------------------------
// One 16-byte chunk; ok = false zero-fills it (rows past the end: masked keys must meet V = 0).
__device__ __forceinline__ void copy16(unsigned char* dst, const unsigned char* src, bool ok) {
#if USE_CP_ASYNC  // knob USE_CP_ASYNC=1: asynchronous copy, hardware zero-fill past the end
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(dst)), "l"(src), "r"(ok ? 16 : 0)
               : "memory");
#else             // knob USE_CP_ASYNC=0: plain 16-byte load, then store
  *reinterpret_cast<uint4*>(dst) = ok ? __ldg(reinterpret_cast<const uint4*>(src)) : make_uint4(0, 0, 0, 0);
#endif
}
// One whole 16-byte chunk (no zero-fill operand: the plain cp.async form).
__device__ __forceinline__ void copy16_full(unsigned char* dst, const unsigned char* src) {
#if USE_CP_ASYNC  // knob USE_CP_ASYNC=1
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_u32(dst)), "l"(src) : "memory");
#else             // knob USE_CP_ASYNC=0
  *reinterpret_cast<uint4*>(dst) = __ldg(reinterpret_cast<const uint4*>(src));
#endif
}

// Bytes between rows r and r + 8 of a tile, for every layout (the swizzles repeat every 8 rows).
template <int RB>
__device__ __forceinline__ constexpr int eight_rows_bytes() {
  return 8 * (MMA_PATH >= 2 ? (RB == 64 ? 64 : 128) : SWIZZLE == 1 ? RB + 16 : RB);
}

// ROWS rows of RB bytes, contiguous in global memory -> a tile laid out by tile_off, by NTHR threads.
// Rows >= valid are zero-filled. A whole tile (the common case) takes the fast path: each thread
// keeps one chunk column and steps down the rows by a constant, so its addresses are a base plus
// immediates (no per-chunk index arithmetic, no zero-fill operand); it needs the row step to be a
// multiple of 8 rows, where every layout repeats.
template <int ROWS, int RB, int NTHR, int UNROLL = (USE_CP_ASYNC ? 16 : 2)>  // (plain loads: a few in flight, not a
__device__ __forceinline__ void load_tile(unsigned char* tile, const unsigned char* g, int valid, int tid) {  // tile's registers)
  constexpr int NC = RB / 16;                    // chunks per row
  constexpr int ROW_STEP = NTHR / NC;            // rows between one thread's chunks
  constexpr bool FAST = NTHR % NC == 0 && ROW_STEP % 8 == 0 && ROWS % ROW_STEP == 0;
  if (FAST && valid >= ROWS) {
    const int r0 = tid / NC, c = tid % NC;
    unsigned char* dst = tile + tile_off<ROWS, RB>(r0, c);
    const unsigned char* src = g + r0 * RB + c * 16;
#pragma unroll UNROLL
    for (int k = 0; k < (FAST ? ROWS / ROW_STEP : 1); ++k)
      copy16_full(dst + k * (ROW_STEP / 8) * eight_rows_bytes<RB>(), src + k * ROW_STEP * RB);
    return;
  }
#pragma unroll (UNROLL == 1 ? 1 : 4)
  for (int i = tid; i < ROWS * NC; i += NTHR) {
    const int r = i / NC, c = i % NC;
    const bool ok = r < valid;
    copy16(tile + tile_off<ROWS, RB>(r, c), g + (ok ? r * RB + c * 16 : 0), ok);  // clamped: never past the tensor
  }
}

// fp8 rows from global -> fp16 tile (synchronous; MMA_PATH=0 keeps Q as fp16).
template <int ROWS>
__device__ __forceinline__ void load_tile_fp8_as_h(unsigned char* tile, const unsigned char* g, int valid, int tid, int nthr) {
  constexpr int NC = HEAD_DIM / 16;  // 16-byte chunks of fp8 per row
  for (int i = tid; i < ROWS * NC; i += nthr) {
    const int r = i / NC, c = i % NC;
    const uint4 raw = r < valid ? __ldg(reinterpret_cast<const uint4*>(g + r * HEAD_DIM + c * 16)) : make_uint4(0, 0, 0, 0);
    uint4 lo, hi;
    fp8x16_to_h16(raw, lo, hi);
    *reinterpret_cast<uint4*>(tile + chunk_off<RB_H>(r, 2 * c)) = lo;
    *reinterpret_cast<uint4*>(tile + chunk_off<RB_H>(r, 2 * c + 1)) = hi;
  }
}

// fp8 tile in smem -> fp16 tile in smem (tensor-core operands that have no e4m3 form).
template <int ROWS>
__device__ __forceinline__ void convert_tile(unsigned char* dst, const unsigned char* src, int tid, int nthr) {
  constexpr int NC = HEAD_DIM / 16;
#pragma unroll 1
  for (int i = tid; i < ROWS * NC; i += nthr) {
    const int r = i / NC, c = i % NC;
    const uint4 raw = *reinterpret_cast<const uint4*>(src + tile_off<ROWS, RB_IN>(r, c));
    uint4 lo, hi;
    fp8x16_to_h16(raw, lo, hi);
    *reinterpret_cast<uint4*>(dst + tile_off<ROWS, RB_H>(r, 2 * c)) = lo;
    *reinterpret_cast<uint4*>(dst + tile_off<ROWS, RB_H>(r, 2 * c + 1)) = hi;
  }
}

// Everything a block needs to know about its work.
struct Work {
  const unsigned char *gQ, *gK, *gV;  // this block's Q tile; this head's K and V
  __half* O;                          // this head's output
  int S, causal, q0, bh, n_tiles, t_begin;
  float scale_log2;                   // softmax_scale * q_descale * k_descale * log2(e)
  float v_descale;
  unsigned long long kmap, vmap;      // USE_TMA=1: the tensor maps' addresses (kernel parameters)
  unsigned tma_bar;                   // USE_TMA=1: 2 * STAGES mbarriers, [stage][K, V]
#if STREAM_K
  int part;                           // knob STREAM_K=1: 0 a whole item; else its boundary's slot c, + first half, - second
#endif
};

__device__ __forceinline__ unsigned char* k_stage(unsigned char* smem, int st) { return smem + OFF_K + st * TILE_N * RS_IN; }
__device__ __forceinline__ unsigned char* v_stage(unsigned char* smem, int st) { return smem + OFF_V + st * TILE_N * RS_IN; }
__device__ __forceinline__ unsigned char* kh_buf(unsigned char* smem, int b) { return smem + OFF_KH + b * TILE_N * RS_H; }
__device__ __forceinline__ unsigned char* vh_buf(unsigned char* smem, int b) { return smem + OFF_VH + b * TILE_N * RS_H; }

// Q tile -> smem (its own cp.async group).
template <int NTHR>
__device__ __forceinline__ void issue_q(const Work& w, unsigned char* smem, int tid) {
  const int valid = min(TILE_M, w.S - w.q0);
#if MMA_PATH == 0 && IN_FP8
  load_tile_fp8_as_h<TILE_M>(smem + OFF_Q, w.gQ, valid, tid, NTHR);
#else
  load_tile<TILE_M, (MMA_PATH >= 1 ? RB_IN : RB_H), NTHR>(smem + OFF_Q, w.gQ, valid, tid);
#endif
  cp_async_commit();
}

// K/V tile t (absolute tile index) -> ring stage st. Two groups: K, then V.
template <int NTHR>
__device__ __forceinline__ void issue_kv(const Work& w, unsigned char* smem, int t, int st, int tid) {
  const int kv0 = t * TILE_N;
#if USE_TMA  // knob USE_TMA=1: thread 0 asks the TMA unit for both tiles, one box per 128-byte panel of
             // the row (HEAD_DIM=128 fp16: two), written in tile_off's swizzle; each tile's mbarrier
             // counts its bytes. The cp.async groups stay (empty) so that Q's group counts as before.
  if (tid == 0) {
    constexpr int PANEL = RB_IN < 128 ? RB_IN : 128;  // bytes of a row per box
    const unsigned bk = w.tma_bar + 16 * st, bv = bk + 8;
    mbar_expect_tx(bk, TILE_N * RB_IN);
#pragma unroll
    for (int p = 0; p < RB_IN / PANEL; ++p)
      tma_load_3d(smem_u32(k_stage(smem, st)) + p * TILE_N * PANEL, w.kmap, p * PANEL / ESZ, kv0, w.bh, bk);
    if (!V_REGS) {  // (V_REGS: V_j comes through registers, load_v_regs)
      mbar_expect_tx(bv, TILE_N * RB_IN);
#pragma unroll
      for (int p = 0; p < RB_IN / PANEL; ++p)
        tma_load_3d(smem_u32(v_stage(smem, st)) + p * TILE_N * PANEL, w.vmap, p * PANEL / ESZ, kv0, w.bh, bv);
    }
  }
  cp_async_commit();
  cp_async_commit();
#else        // knob USE_TMA=0: every thread copies its chunks
  const int valid = min(TILE_N, w.S - kv0);
  load_tile<TILE_N, RB_IN, NTHR>(k_stage(smem, st), w.gK + (long long)kv0 * RB_IN, valid, tid);
  cp_async_commit();
  if (!V_REGS) load_tile<TILE_N, RB_IN, NTHR>(v_stage(smem, st), w.gV + (long long)kv0 * RB_IN, valid, tid);
  cp_async_commit();  // (V_REGS: an empty group, so the counts stay)
#endif
}
// USE_TMA=1: wait for the K (which = 0) or V (1) tile of block-local tile j, in stage j % STAGES.
__device__ __forceinline__ void tma_wait(const Work& w, int j, int which) {
#if USE_TMA  // knob USE_TMA=1
  mbar_wait(w.tma_bar + 16 * (j % STAGES) + 8 * which, (j / STAGES) & 1);
#endif
}
__device__ __forceinline__ void issue_none() { cp_async_commit(); cp_async_commit(); }  // keep group counts uniform

// fp8: make the fp16 copies that the tensor-core products need (stage st -> conversion buffer b).
__device__ __forceinline__ void convert_kv(unsigned char* smem, int st, int b, int tid, int nthr) {
  if (NEED_KH) convert_tile<TILE_N>(kh_buf(smem, b), k_stage(smem, st), tid, nthr);
  if (NEED_VH) convert_tile<TILE_N>(vh_buf(smem, b), v_stage(smem, st), tid, nthr);
}

// WARP_SPEC=1 producer: one warp copies Q and every K/V tile, STAGES deep, converting fp8 where
// needed, and hands each stage over through named barriers FULL / EMPTY.
__device__ __forceinline__ void producer(const Work& w, unsigned char* smem, int lane) {
  if (w.n_tiles == 0) return;
  issue_q<32>(w, smem, lane);
  for (int j = 0; j < w.n_tiles; ++j) {
    const int st = j % STAGES;
    if (j >= STAGES) named_sync(BAR_EMPTY + st, NT);  // consumers are done with tile j - STAGES
    issue_kv<32>(w, smem, w.t_begin + j, st, lane);
    if (j >= PD) {                                     // tile j - PD has had PD tiles of cover
      cp_async_wait<2 * PD>();
      __syncwarp();                                    // lanes convert chunks other lanes copied
      const int done = (j - PD) % STAGES;
      convert_kv(smem, done, done, lane, 32);
      named_arrive(BAR_FULL + done, NT);
    }
  }
  cp_async_wait<0>();
  __syncwarp();
  for (int j = (w.n_tiles > PD ? w.n_tiles - PD : 0); j < w.n_tiles; ++j) {
    const int done = j % STAGES;
    convert_kv(smem, done, done, lane, 32);
    named_arrive(BAR_FULL + done, NT);
  }
}

// ---------------------------------------------------------------------------------------------
// SPLIT_KV > 1: the SPLIT_KV blocks of one query tile are one thread-block cluster (__cluster_dims__
// on the kernel, rank = blockIdx.z). Each 16-row tile of the query tile has an owner block; the
// other splits push their partial state of it (O, m, l: one warp's registers) straight into the
// owner's mailbox with st.async, each store counted by the owner's mbarrier, and the owner merges
// them into its own registers when all bytes are in (split_exchange). One cluster barrier, split
// across the whole kernel (arrive at the start, wait before the first push), makes the mbarrier's
// initialisation visible; nothing waits for a peer to finish except the owner for its mail.
// ---------------------------------------------------------------------------------------------
#if SPLIT_KV > 1
// owner block of 16-row tile rt, and the tile's place among the owner's
__device__ __forceinline__ int rt_owner(int rt) { return NRT >= SPLIT_KV ? rt / OWNED : rt * (SPLIT_KV / NRT); }
__device__ __forceinline__ int rt_slot(int rt) { return NRT >= SPLIT_KV ? rt % OWNED : 0; }
__device__ __forceinline__ int owned_by(int z) {  // row tiles block z owns
  return NRT >= SPLIT_KV ? OWNED : (z % (SPLIT_KV / NRT) == 0 ? 1 : 0);
}
__device__ __forceinline__ unsigned peer_addr(unsigned a, int rank) {  // the same byte in block `rank`
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ void st_async4(unsigned a, float x, float y, float z, float w, unsigned mbar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];\n"
               ::"r"(a), "f"(x), "f"(y), "f"(z), "f"(w), "r"(mbar) : "memory");
}
// At the start: the mbarrier expects this block's whole mail (one arrival, the bytes as transactions),
// then the cluster barrier's arrive half; its wait half is split_wait_peers.
__device__ __forceinline__ void split_start(unsigned char* smem) {
  if (threadIdx.x == 0) {
    const unsigned mbar = smem_u32(smem + OFF_MAIL + MAIL_BYTES - 16);
    const unsigned bytes = (SPLIT_KV - 1) * owned_by(blockIdx.z) * PART_BYTES;
    mbar_init(mbar);
    mbar_expect_tx(mbar, bytes);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void split_wait_peers() {  // every block of the cluster has run split_start
  asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void split_wait_mail(unsigned char* smem) {
  mbar_wait(smem_u32(smem + OFF_MAIL + MAIL_BYTES - 16), 0);
}
#endif

#if MMA_PATH >= 1
// =============================================================================================
// MMA_PATH=1: register-resident mma.sync (FlashAttention-2). Warp owns rows [wrow, wrow + WM).
// Fragment layout (m16n8): thread (g = lane/4, t = lane%4) holds rows g and g+8, columns 2t, 2t+1.
// MMA_PATH=2 runs the same code with the two products replaced by warpgroup MMAs (wg_qk, warp_pv).
// =============================================================================================
__device__ __forceinline__ void ldsm_x4(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldsm_x4_t(unsigned (&r)[4], const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem_u32(p)));
}
// C += A·B for one 16x8 score tile over 32 bytes of HEAD_DIM.
__device__ __forceinline__ void mma_qk(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
#if IN_FP8  // fp8 inputs: e4m3 x e4m3 -> f32, k = 32
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#endif
}
// C += A·B, A and B e4m3 (PV_FP8=1 P·V).
__device__ __forceinline__ void mma_e4m3(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Four floats -> four e4m3 (first in the low byte), saturating.
__device__ __forceinline__ unsigned pack_e4m3x4(float a, float b, float c, float d) {
  const unsigned lo = __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, __NV_E4M3);
  const unsigned hi = __nv_cvt_float2_to_fp8x2(make_float2(c, d), __NV_SATFINITE, __NV_E4M3);
  return lo | (hi << 16);
}
__device__ __forceinline__ void mma_pv(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

#if MMA_PATH >= 2
// ---------------------------------------------------------------------------------------------
// MMA_PATH=2 (and 3): Hopper warpgroup MMA. Each product is issued, committed and waited for at once.
// Shared-memory operands are 64-column panels in the 128-byte swizzle (tile_off), described by
//   bits [0,14) start address >> 4, [16,30) leading byte offset >> 4, [32,46) stride byte
//   offset >> 4, [49,52) base offset (0: tiles are 1024-byte aligned), [62,64) 1 = 128-byte swizzle.
// K-major (Q, K: HEAD_DIM contiguous): 8-row groups SBO = 1024 bytes apart, LBO unused (16); a
// 16-column k-step is +32 bytes inside the 128-byte row (the hardware applies the XOR).
// MN-major (V for P·V, tnspB = 1; HEAD_DIM contiguous): 8-key groups SBO = 1024 bytes apart, 64-column
// panels LBO = TILE_N * 128 bytes apart; a 16-key k-step is +2048 bytes.
// The accumulator of m64nNk16 gives warp w of the group rows 16w + g, 16w + g + 8, columns 8i + 2t,
// +1 in registers 4i .. 4i + 3: MMA_PATH=1's C-fragment layout, and the register A operand is its
// A-fragment layout, so P goes from the score registers to the P·V A operand as in MMA_PATH=1.
// ---------------------------------------------------------------------------------------------
// Q·Kᵀ instruction: fp16 (k = 16) or, knob IN_FP8=1, e4m3 (k = 32, no transpose operands: fp8 wgmma
// takes K-major A and B only, which Q and K are). Either way one instruction eats 32 bytes of a row.
#if IN_FP8
#define WG_QK_TYPE "k32.f32.e4m3.e4m3 "
#define WG_QK_TAIL ", p, 1, 1;\n}\n"
#else
#define WG_QK_TYPE "k16.f32.f16.f16 "
#define WG_QK_TAIL ", p, 1, 1, 0, 0;\n}\n"
#endif
// Q and K tiles: rows of RB_IN bytes; fp8 at HEAD_DIM=64 has 64-byte rows and the 64-byte swizzle.
constexpr int QK_ROWB = RB_IN == 64 ? 64 : 128;         // bytes per row within a panel
constexpr unsigned QK_SBO = 8 * QK_ROWB;                // one 8-row swizzle atom
constexpr unsigned QK_LAYOUT = RB_IN == 64 ? 2 : 1;     // descriptor swizzle mode
// layout: 1 = 128-byte swizzle, 2 = 64-byte swizzle, 3 = 32-byte swizzle (bits 62-63)
__device__ __forceinline__ unsigned long long wg_desc(const void* p, unsigned lbo, unsigned sbo, unsigned layout = 1) {
  return (unsigned long long)((smem_u32(p) & 0x3FFFFu) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | ((unsigned long long)layout << 62);
}
__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Pin registers in place between the volatile wgmma fence / wait statements (no code emitted).
template <int R>
__device__ __forceinline__ void wg_keep(float (&d)[R][4]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[i][e])::"memory");
}
template <int R>
__device__ __forceinline__ void wg_keep(unsigned (&a)[R][4]) {
#pragma unroll
  for (int i = 0; i < R; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[i][e])::"memory");
}
// D(64x32) = A(smem) . B(smem) (+ D when scale_d): m64n32k16, both K-major
__device__ __forceinline__ void wg_ss(float (&d)[4][4], unsigned long long a, unsigned long long b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n32" WG_QK_TYPE
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
      "%16, %17" WG_QK_TAIL
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3])
      : "l"(a), "l"(b), "r"(scale_d));
}
// D(64x64) = A(smem) . B(smem) (+ D when scale_d): m64n64k16, both K-major
__device__ __forceinline__ void wg_ss(float (&d)[8][4], unsigned long long a, unsigned long long b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n64" WG_QK_TYPE
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
      "%32, %33" WG_QK_TAIL
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])
      : "l"(a), "l"(b), "r"(scale_d));
}
// D(64x128) = A(smem) . B(smem) (+ D when scale_d): m64n128k16, both K-major
__device__ __forceinline__ void wg_ss(float (&d)[16][4], unsigned long long a, unsigned long long b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128" WG_QK_TYPE
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
      "%64, %65" WG_QK_TAIL
      : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),
        "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),
        "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),
        "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),
        "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),
        "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),
        "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),
        "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),
        "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),
        "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),
        "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),
        "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),
        "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),
        "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),
        "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),
        "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])
      : "l"(a), "l"(b), "r"(scale_d));
}
#if MMA_PATH == 3
#define WG_D4(d, i) "+f"(d[i][0]), "+f"(d[i][1]), "+f"(d[i][2]), "+f"(d[i][3])
// Wider score tiles (MMA_PATH=3, TILE_N 160 .. 224, as FlashAttention-3 takes for fp8: 128 x 224): one
// instruction each, as above (the same operands, more accumulator registers). Written out one per width:
// an asm statement's operand numbers must be literal text, and each width is one wgmma shape.
__device__ __forceinline__ void wg_ss(float (&d)[20][4], unsigned long long a, unsigned long long b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %82, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n160" WG_QK_TYPE
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79}, "
      "%80, %81" WG_QK_TAIL
      : WG_D4(d, 0), WG_D4(d, 1), WG_D4(d, 2), WG_D4(d, 3),
        WG_D4(d, 4), WG_D4(d, 5), WG_D4(d, 6), WG_D4(d, 7),
        WG_D4(d, 8), WG_D4(d, 9), WG_D4(d, 10), WG_D4(d, 11),
        WG_D4(d, 12), WG_D4(d, 13), WG_D4(d, 14), WG_D4(d, 15),
        WG_D4(d, 16), WG_D4(d, 17), WG_D4(d, 18), WG_D4(d, 19)
      : "l"(a), "l"(b), "r"(scale_d));
}
__device__ __forceinline__ void wg_ss(float (&d)[22][4], unsigned long long a, unsigned long long b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n176" WG_QK_TYPE
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87}, "
      "%88, %89" WG_QK_TAIL
      : WG_D4(d, 0), WG_D4(d, 1), WG_D4(d, 2), WG_D4(d, 3),
        WG_D4(d, 4), WG_D4(d, 5), WG_D4(d, 6), WG_D4(d, 7),
        WG_D4(d, 8), WG_D4(d, 9), WG_D4(d, 10), WG_D4(d, 11),
        WG_D4(d, 12), WG_D4(d, 13), WG_D4(d, 14), WG_D4(d, 15),
        WG_D4(d, 16), WG_D4(d, 17), WG_D4(d, 18), WG_D4(d, 19),
        WG_D4(d, 20), WG_D4(d, 21)
      : "l"(a), "l"(b), "r"(scale_d));
}
__device__ __forceinline__ void wg_ss(float (&d)[24][4], unsigned long long a, unsigned long long b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n192" WG_QK_TYPE
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}, "
      "%96, %97" WG_QK_TAIL
      : WG_D4(d, 0), WG_D4(d, 1), WG_D4(d, 2), WG_D4(d, 3),
        WG_D4(d, 4), WG_D4(d, 5), WG_D4(d, 6), WG_D4(d, 7),
        WG_D4(d, 8), WG_D4(d, 9), WG_D4(d, 10), WG_D4(d, 11),
        WG_D4(d, 12), WG_D4(d, 13), WG_D4(d, 14), WG_D4(d, 15),
        WG_D4(d, 16), WG_D4(d, 17), WG_D4(d, 18), WG_D4(d, 19),
        WG_D4(d, 20), WG_D4(d, 21), WG_D4(d, 22), WG_D4(d, 23)
      : "l"(a), "l"(b), "r"(scale_d));
}
__device__ __forceinline__ void wg_ss(float (&d)[28][4], unsigned long long a, unsigned long long b, int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %114, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n224" WG_QK_TYPE
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63,"
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79,"
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95,"
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111}, "
      "%112, %113" WG_QK_TAIL
      : WG_D4(d, 0), WG_D4(d, 1), WG_D4(d, 2), WG_D4(d, 3),
        WG_D4(d, 4), WG_D4(d, 5), WG_D4(d, 6), WG_D4(d, 7),
        WG_D4(d, 8), WG_D4(d, 9), WG_D4(d, 10), WG_D4(d, 11),
        WG_D4(d, 12), WG_D4(d, 13), WG_D4(d, 14), WG_D4(d, 15),
        WG_D4(d, 16), WG_D4(d, 17), WG_D4(d, 18), WG_D4(d, 19),
        WG_D4(d, 20), WG_D4(d, 21), WG_D4(d, 22), WG_D4(d, 23),
        WG_D4(d, 24), WG_D4(d, 25), WG_D4(d, 26), WG_D4(d, 27)
      : "l"(a), "l"(b), "r"(scale_d));
}
#endif
// D(64xN) += A(registers) . B(smem): NAME(d, a, b) for N = 64 (d[8][4]) and 128 (d[16][4]). A is 4 registers:
// fp16 (4 x f16x2, k = 16) with B MN-major (tnspB = 1: V for P·V), or knob PV_FP8=1 e4m3 (4 x e4m3x4,
// k = 32) with B K-major (the transposed V: e4m3 wgmma reads no transposed operand).
#define WG_RS_N64(NAME, TYPE, IMM)                                                                      \
  __device__ __forceinline__ void NAME(float (&d)[8][4], const unsigned (&a)[4], unsigned long long b) { \
    asm volatile(                                                                                       \
        "wgmma.mma_async.sync.aligned.m64n64" TYPE " "                                                  \
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"                        \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "             \
        "{%32, %33, %34, %35}, %36, " IMM ";\n"                                                         \
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),                                   \
          "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),                                   \
          "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),                                   \
          "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),                                   \
          "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),                                   \
          "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),                                   \
          "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),                                   \
          "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3])                                    \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));                                        \
  }
#define WG_RS_N128(NAME, TYPE, IMM)                                                                      \
  __device__ __forceinline__ void NAME(float (&d)[16][4], const unsigned (&a)[4], unsigned long long b) { \
    asm volatile(                                                                                        \
        "wgmma.mma_async.sync.aligned.m64n128" TYPE " "                                                  \
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"                         \
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"                \
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"                \
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "              \
        "{%64, %65, %66, %67}, %68, " IMM ";\n"                                                          \
        : "+f"(d[0][0]), "+f"(d[0][1]), "+f"(d[0][2]), "+f"(d[0][3]),                                    \
          "+f"(d[1][0]), "+f"(d[1][1]), "+f"(d[1][2]), "+f"(d[1][3]),                                    \
          "+f"(d[2][0]), "+f"(d[2][1]), "+f"(d[2][2]), "+f"(d[2][3]),                                    \
          "+f"(d[3][0]), "+f"(d[3][1]), "+f"(d[3][2]), "+f"(d[3][3]),                                    \
          "+f"(d[4][0]), "+f"(d[4][1]), "+f"(d[4][2]), "+f"(d[4][3]),                                    \
          "+f"(d[5][0]), "+f"(d[5][1]), "+f"(d[5][2]), "+f"(d[5][3]),                                    \
          "+f"(d[6][0]), "+f"(d[6][1]), "+f"(d[6][2]), "+f"(d[6][3]),                                    \
          "+f"(d[7][0]), "+f"(d[7][1]), "+f"(d[7][2]), "+f"(d[7][3]),                                    \
          "+f"(d[8][0]), "+f"(d[8][1]), "+f"(d[8][2]), "+f"(d[8][3]),                                    \
          "+f"(d[9][0]), "+f"(d[9][1]), "+f"(d[9][2]), "+f"(d[9][3]),                                    \
          "+f"(d[10][0]), "+f"(d[10][1]), "+f"(d[10][2]), "+f"(d[10][3]),                                \
          "+f"(d[11][0]), "+f"(d[11][1]), "+f"(d[11][2]), "+f"(d[11][3]),                                \
          "+f"(d[12][0]), "+f"(d[12][1]), "+f"(d[12][2]), "+f"(d[12][3]),                                \
          "+f"(d[13][0]), "+f"(d[13][1]), "+f"(d[13][2]), "+f"(d[13][3]),                                \
          "+f"(d[14][0]), "+f"(d[14][1]), "+f"(d[14][2]), "+f"(d[14][3]),                                \
          "+f"(d[15][0]), "+f"(d[15][1]), "+f"(d[15][2]), "+f"(d[15][3])                                 \
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));                                         \
  }
WG_RS_N64(wg_rs, "k16.f32.f16.f16", "1, 1, 1, 1")      // scale-d, scale-a, scale-b, tnspB
WG_RS_N128(wg_rs, "k16.f32.f16.f16", "1, 1, 1, 1")
#if PV_FP8 && MMA_PATH == 3
WG_RS_N64(wg_rs8, "k32.f32.e4m3.e4m3", "1, 1, 1")      // scale-d, scale-a, scale-b
WG_RS_N128(wg_rs8, "k32.f32.e4m3.e4m3", "1, 1, 1")
#endif
#if ROWSUM_MMA
// knob ROWSUM_MMA=1: O(64 x HEAD_DIM) and the ones block's 8 columns (s) in one e4m3 wgmma, N = HEAD_DIM + 8
__device__ __forceinline__ void wg_rs8s(float (&d)[8][4], float (&s)[1][4], const unsigned (&a)[4], unsigned long long b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n72k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35}, "
      "{%36, %37, %38, %39}, %40, 1, 1, 1;\n"
      : WG_D4(d, 0), WG_D4(d, 1), WG_D4(d, 2), WG_D4(d, 3), WG_D4(d, 4), WG_D4(d, 5), WG_D4(d, 6), WG_D4(d, 7),
        WG_D4(s, 0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
__device__ __forceinline__ void wg_rs8s(float (&d)[16][4], float (&s)[1][4], const unsigned (&a)[4], unsigned long long b) {
  asm volatile(
      "wgmma.mma_async.sync.aligned.m64n136k32.f32.e4m3.e4m3 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67}, "
      "{%68, %69, %70, %71}, %72, 1, 1, 1;\n"
      : WG_D4(d, 0), WG_D4(d, 1), WG_D4(d, 2), WG_D4(d, 3), WG_D4(d, 4), WG_D4(d, 5), WG_D4(d, 6), WG_D4(d, 7),
        WG_D4(d, 8), WG_D4(d, 9), WG_D4(d, 10), WG_D4(d, 11), WG_D4(d, 12), WG_D4(d, 13), WG_D4(d, 14), WG_D4(d, 15),
        WG_D4(s, 0)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));
}
#endif

template <int N>
__device__ __forceinline__ void wg_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// Issue S = Q·Kᵀ for the warpgroup of the warp at row wrow (s: this warp's 16 rows, overwritten).
// Descriptors are built once per call and stepped by adding (bytes >> 4) to the start-address field
// (shared memory stays below 2^18 bytes, so the 14-bit field never carries). The warpgroup's first
// row goes through a shuffle from lane 0 so that the compiler may prove it warp-uniform and keep the
// descriptors in uniform registers (CUTLASS's canonical_warp_group_idx idiom). Measured on the H100:
// no change in time (long 375.0 -> 373.2 us, docs/results/sdpa-hopper.md); the SASS was not inspected.
__device__ __forceinline__ void wg_qk_issue(float (&s)[NTN][4], const unsigned char* sQ, const unsigned char* sK, int wrow) {
  const int row0 = __shfl_sync(0xffffffffu, wrow & ~63, 0);
  const unsigned long long dq = wg_desc(sQ + row0 * QK_ROWB, 16, QK_SBO, QK_LAYOUT);  // the warpgroup's 64 rows
  const unsigned long long dk = wg_desc(sK, 16, QK_SBO, QK_LAYOUT);
#pragma unroll
  for (int ks = 0; ks < RB_IN / 32; ++ks)  // panel ks / 4, bytes 32 (ks % 4) of each row
    wg_ss(s, dq + (((ks >> 2) * (TILE_M * 128) + (ks & 3) * 32) >> 4),
          dk + (((ks >> 2) * (TILE_N * 128) + (ks & 3) * 32) >> 4), ks > 0);
}
// Issue O += P·V: P as fp16 A-fragments (16 keys each), V (smem, MN-major) one m64n{HEAD_DIM}k16 per 16 keys.
__device__ __forceinline__ void wg_pv_issue(float (&o)[NTD][4], const unsigned (&a)[TILE_N / 16][4], const unsigned char* sV) {
  constexpr unsigned V_LBO = HEAD_DIM > 64 ? TILE_N * 128 : 1024;  // one panel at HEAD_DIM=64: LBO unused
  const unsigned long long dv = wg_desc(sV, V_LBO, 1024);
#pragma unroll
  for (int kk = 0; kk < TILE_N / 16; ++kk) wg_rs(o, a[kk], dv + ((kk * 16 * 128) >> 4));
}
// P (this warp's score registers) -> fp16 A-fragments, MMA_PATH=1's packing.
__device__ __forceinline__ void wg_pack_p(unsigned (&a)[TILE_N / 16][4], const float (&p)[NTN][4]) {
#pragma unroll
  for (int kk = 0; kk < TILE_N / 16; ++kk) {
    a[kk][0] = pack_h2(p[2 * kk][0], p[2 * kk][1]);
    a[kk][1] = pack_h2(p[2 * kk][2], p[2 * kk][3]);
    a[kk][2] = pack_h2(p[2 * kk + 1][0], p[2 * kk + 1][1]);
    a[kk][3] = pack_h2(p[2 * kk + 1][2], p[2 * kk + 1][3]);
  }
}
// Synchronous S = Q·Kᵀ (WG_PIPE=0).
__device__ __forceinline__ void wg_qk(float (&s)[NTN][4], const unsigned char* sQ, const unsigned char* sK, int wrow) {
  wg_fence();
  wg_qk_issue(s, sQ, sK, wrow);
  wg_commit();
  wg_wait_all();
  wg_keep(s);
}
#endif  // MMA_PATH >= 2

struct WarpState {
  float o[MT][NTD][4];     // unnormalised output accumulator
  float m[MT][2];          // running max (log2 domain) of rows g, g+8
  float l[MT][2];          // running sum, this thread's columns only (quad-reduced at the end)
#if WG_PIPE || MMA_PATH == 3
  float alpha[MT][2];      // WG_PIPE=1, MMA_PATH=3: this tile's rescale of O, applied once the previous P·V is done
#endif
#if ROWSUM_MMA
  float lsum[1][4];        // knob ROWSUM_MMA=1: P·V's columns HEAD_DIM .. +7, each the running sum of rows g (0, 1), g+8 (2, 3)
#endif
  unsigned qf[Q_IN_REGS ? MT : 1][Q_IN_REGS ? KS : 1][4];  // Q A-fragments
};
// knob ROWSUM_MMA=1: the running sums are wgmma accumulators like O, fenced with it
__device__ __forceinline__ void wg_keep_sum(WarpState& ws) {
#if ROWSUM_MMA
  wg_keep(ws.lsum);
#endif
}

__device__ __forceinline__ void load_q_frags(WarpState& ws, const unsigned char* sQ, int wrow, int lane) {
  if (Q_IN_REGS) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int ks = 0; ks < KS; ++ks)
        ldsm_x4(ws.qf[Q_IN_REGS ? mt : 0][Q_IN_REGS ? ks : 0], sQ + chunk_off<RB_IN>(wrow + mt * 16 + (lane & 15), ks * 2 + (lane >> 4)));
  }
}

typedef float Scores[MT][NTN][4];  // one warp's score / probability tile, in registers
constexpr int RS_WAYS = MMA_PATH == 3 ? 4 : 1;  // partial row sums of the probabilities
// Max of columns e, e + 1 of every 8-key tile (one row of this thread's scores), as a tree.
__device__ __forceinline__ float row_max_tree(const float (&t)[NTN][4], int e) {
  float m[NTN];
#pragma unroll
  for (int i = 0; i < NTN; ++i) m[i] = fmaxf(t[i][e], t[i][e + 1]);
#pragma unroll
  for (int w = 1; w < NTN; w *= 2)
#pragma unroll
    for (int i = 0; i + w < NTN; i += 2 * w) m[i] = fmaxf(m[i], m[i + w]);
  return m[0];
}

// Keys past the end and (causal) keys after the query: -inf (qw: the warp's first row).
__device__ __forceinline__ void mask_scores(Scores& s, const Work& w, int qw, int kv0, int lane) {
  const int g = lane >> 2, tq = lane & 3;
  if (kv0 + TILE_N > w.S || (w.causal && kv0 + TILE_N - 1 > qw)) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NTN; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int row = qw + mt * 16 + g + (e >> 1) * 8;
          const int col = kv0 + nt * 8 + tq * 2 + (e & 1);
          if (col >= w.S || (w.causal && col > row)) s[mt][nt][e] = neg_inf();
        }
  }
}

// First half of a K/V tile for one warp: S = Q·Kᵀ, mask, online softmax; s ends holding P. MAX_TREE: the row max
// as a tree (MMA_PATH=3's, more registers) or a chain.
template <bool MAX_TREE = MMA_PATH == 3>
__device__ __forceinline__ void warp_scores(WarpState& ws, Scores& s, const unsigned char* sQ, const unsigned char* sK,
                                            int wrow, int lane, const Work& w, int kv0, bool may_mask = true) {
  const int qw = w.q0 + wrow;  // global index of the warp's first row

  // A. S = Q·Kᵀ (raw products; scale applied in the softmax)
#if (MMA_PATH == 2 && (WG_PIPE || QK_HOISTED)) || MMA_PATH == 3  // s already holds Q·Kᵀ: knob WG_PIPE=1
                     // (wg_pipe_issue), issued by block_mma for every warpgroup (QK_HOISTED), or MMA_PATH=3
#elif MMA_PATH == 2  // knob MMA_PATH=2: one warpgroup MMA per 16 columns of HEAD_DIM (first one overwrites s)
  wg_qk(s[0], sQ, sK, wrow);
#else              // knob MMA_PATH=1: mma.sync tiles, Q and K fragments through ldmatrix
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NTN; ++nt) s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.f;
#pragma unroll
  for (int ks = 0; ks < KS; ++ks) {
    unsigned a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if (Q_IN_REGS) {
#pragma unroll
        for (int i = 0; i < 4; ++i) a[mt][i] = ws.qf[Q_IN_REGS ? mt : 0][Q_IN_REGS ? ks : 0][i];
      } else {
        ldsm_x4(a[mt], sQ + chunk_off<RB_IN>(wrow + mt * 16 + (lane & 15), ks * 2 + (lane >> 4)));
      }
    }
#pragma unroll
    for (int np = 0; np < TILE_N / 16; ++np) {
      unsigned b[4];
      ldsm_x4(b, sK + chunk_off<RB_IN>(np * 16 + ((lane >> 4) << 3) + (lane & 7), ks * 2 + ((lane >> 3) & 1)));
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_qk(s[mt][2 * np], a[mt], b[0], b[1]);
        mma_qk(s[mt][2 * np + 1], a[mt], b[2], b[3]);
      }
    }
  }
#endif

  // B. mask keys past the end and (causal) keys after the query
  if (may_mask) mask_scores(s, w, qw, kv0, lane);

  // C. online softmax, rows g (h=0) and g+8 (h=1) of each 16-row tile
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float mx = neg_inf();
      if (MAX_TREE) {  // knob MMA_PATH=3: a tree (as a chain of NTN dependent steps it stalled fp8's softmax)
        mx = row_max_tree(s[mt], 2 * h);
      } else {
#pragma unroll
        for (int nt = 0; nt < NTN; ++nt) mx = fmaxf(mx, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
      }
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));  // the 4 threads of a row
      mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
      const float m_new = fmaxf(ws.m[mt][h], P_HEADROOM > 0.f ? mx * w.scale_log2 + P_HEADROOM  // (EXP_BEFORE_MAX)
                                                               : mx * w.scale_log2);  // online softmax: running max
      const float m_use = m_new == neg_inf() ? 0.f : m_new;          // row masked so far: no inf - inf
#if LAZY_RESCALE  // knob LAZY_RESCALE=1: alpha exactly 1 where the max stayed, so that fa3_step can skip
      const float alpha = m_new == ws.m[mt][h] ? 1.f : fast_exp2(ws.m[mt][h] - m_use);
#else
      const float alpha = fast_exp2(ws.m[mt][h] - m_use);            // rescale earlier tiles
#endif
      const float m_p = m_use - P_SHIFT;                              // PV_FP8: P scaled by 2^P_SHIFT
      ws.m[mt][h] = m_new;
      float rs[RS_WAYS] = {};  // (MMA_PATH=3: independent partial sums, for the same reason)
#pragma unroll
      for (int nt = 0; nt < NTN; ++nt)
#pragma unroll
        for (int e = 2 * h; e < 2 * h + 2; ++e) {
          const float p = fast_exp2(fmaf(s[mt][nt][e], w.scale_log2, -m_p));  // this tile's probabilities
          s[mt][nt][e] = p;
#if !ROWSUM_MMA  // (knob ROWSUM_MMA=1: P·V sums them)
          rs[nt % RS_WAYS] += p;
#endif
        }
#pragma unroll
      for (int i = 1; i < RS_WAYS; ++i) rs[0] += rs[i];
      ws.l[mt][h] = ws.l[mt][h] * alpha + rs[0];                     // running sum
#if WG_PIPE || MMA_PATH == 3  // knob WG_PIPE=1, MMA_PATH=3: the previous tile's P·V may still be writing O
      ws.alpha[mt][h] = alpha;
#else
#pragma unroll
      for (int dt = 0; dt < NTD; ++dt) {
        ws.o[mt][dt][2 * h] *= alpha;
        ws.o[mt][dt][2 * h + 1] *= alpha;
      }
#endif
    }

}

#if EXP_BEFORE_MAX
// knob EXP_BEFORE_MAX=1. A row's probabilities, taken against its reference, are at most P_TOP where the reference was
// set (2^P_SHIFT, less the headroom), and may grow to P_KEEP as the row's max rises before they are rescaled: e4m3
// P·V keeps them under its 448 (2^8.75 = 430), fp16 P far inside its range (2^8).
__host__ __device__ constexpr float pow2(int n) { return n == 0 ? 1.f : 2.f * pow2(n - 1); }
constexpr float P_BOUND = pow2((int)P_SHIFT);
constexpr float P_TOP = pow2((int)(P_SHIFT - P_HEADROOM));
constexpr float P_KEEP = PV_FP8 ? P_BOUND * 1.6817928f : P_BOUND * 256.f;
// Past 2^SDPA_RESCORE_RISE above P_BOUND the exponentials taken against the old max may have overflowed fp32 (2^128),
// so the scores are recomputed. A diagnostic define, not a knob: 0 sends every rise of a max through the
// recomputation (its GREEN check).
#ifndef SDPA_RESCORE_RISE
#define SDPA_RESCORE_RISE 96
#endif
static_assert(SDPA_RESCORE_RISE >= 0 && SDPA_RESCORE_RISE <= 112, "SDPA_RESCORE_RISE: 0 .. 112 (2^(8 + 112) < 2^128)");
constexpr float P_RESCORE = P_BOUND * pow2(SDPA_RESCORE_RISE);

// The online softmax with its exponentials before the tile's max: they are taken against the running max as it
// stands, so they wait for nothing but the scores, and the tile's max is then the max of its probabilities (found as
// they come out of the exponentials, no longer ahead of them). Rows whose probabilities stay under P_KEEP keep their
// reference (alpha exactly 1: O is not rescaled); a row above it moves its reference and has its probabilities and
// sum scaled down to P_TOP; an infinite one (or past P_RESCORE, or a row with no max yet) returns true with ws
// untouched, and the caller recomputes the scores.
__device__ __forceinline__ bool softmax_before_max(WarpState& ws, float (&s)[NTN][4], const Work& w) {
  float rs[2][RS_WAYS] = {};
#pragma unroll
  for (int nt = 0; nt < NTN; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      // (a row with no max yet: +inf or NaN, past P_RESCORE below)
      const float p = fast_exp2(fmaf(s[nt][e], w.scale_log2, P_SHIFT - ws.m[0][e >> 1]));
      s[nt][e] = p;
#if !ROWSUM_MMA  // (knob ROWSUM_MMA=1: P·V sums them)
      rs[e >> 1][nt % RS_WAYS] += p;
#endif
    }
  float pmax[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    pmax[h] = row_max_tree(s, 2 * h);
    pmax[h] = fmaxf(pmax[h], __shfl_xor_sync(0xffffffffu, pmax[h], 1));  // the 4 threads of a row
    pmax[h] = fmaxf(pmax[h], __shfl_xor_sync(0xffffffffu, pmax[h], 2));
  }
  if (__any_sync(0xffffffffu, !(pmax[0] <= P_RESCORE) || !(pmax[1] <= P_RESCORE))) return true;
  float alpha[2] = {1.f, 1.f};
  if (__any_sync(0xffffffffu, pmax[0] > P_KEEP || pmax[1] > P_KEEP)) {
#pragma unroll
    for (int h = 0; h < 2; ++h)
      if (pmax[h] > P_KEEP) {
        alpha[h] = __fdividef(P_TOP, pmax[h]);                      // 2^(m - m_new)
        ws.m[0][h] += __log2f(pmax[h]) - (P_SHIFT - P_HEADROOM);   // m_new: the row's max (within ex2's error) + headroom
      }
#pragma unroll
    for (int nt = 0; nt < NTN; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] *= alpha[e >> 1];
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int i = 0; i < RS_WAYS; ++i) rs[h][i] *= alpha[h];
  }
#pragma unroll
  for (int h = 0; h < 2; ++h) {
#pragma unroll
    for (int i = 1; i < RS_WAYS; ++i) rs[h][0] += rs[h][i];
    ws.l[0][h] = ws.l[0][h] * alpha[h] + rs[h][0];
    ws.alpha[0][h] = alpha[h];
  }
  return false;
}
#endif

// Second half: O += P·V (P from registers as fp16 A-fragments, V fp16 through ldmatrix.trans).
// fp8 V: ldmatrix.trans on byte pairs gives lane (g, t) keys 2t, 2t+1 of the columns 2g, 2g+1 of a
// 16-byte chunk; one byte permute per column gives the fp8x2 pair, one cvt widens it to the fp16
// B-fragment. Output tile 4*dq + 2*j + e (e = 0 even, 1 odd columns) then holds columns
// d = 32*dq + 16*j + 2*n + e for its n = 2t, 2t+1: lane t owns the 4 contiguous columns 4t .. 4t+3
// of each 16-column group (the epilogue's stores undo the permutation).
__device__ __forceinline__ void warp_pv(WarpState& ws, const Scores& s, const unsigned char* sV, int lane) {
#if MMA_PATH == 2  // knob MMA_PATH=2: P (registers, fp16 A-fragments) · V (smem, MN-major), one
                   // m64n{HEAD_DIM}k16 per 16 keys, accumulating into the warpgroup's O
  unsigned a[TILE_N / 16][4];
  wg_pack_p(a, s[0]);
  wg_keep(a);        // P and the alpha-rescaled O are in their registers before the fence
  wg_keep(ws.o[0]);
  wg_fence();
  wg_pv_issue(ws.o[0], a, sV);
  wg_commit();
  wg_wait_all();
  wg_keep(ws.o[0]);
#elif PV_FP8  // knob PV_FP8=1: e4m3 P·V, 32 keys per mma. ldmatrix.trans of 4 key octets of one chunk
            // gives lane (g, t) keys 2t, 2t+1, 8+2t, 9+2t (and 16+ ..) of columns 2g, 2g+1; the score
            // registers hold exactly those keys of P (C-fragment columns 2t, 2t+1 of two 8-key tiles),
            // so both operands agree on this key order with no shuffles. Columns come out in the
            // same even / odd tile order as the fp16 fp8-V path below.
#pragma unroll
  for (int q = 0; q < TILE_N / 32; ++q) {
    unsigned a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      a[mt][0] = pack_e4m3x4(s[mt][4 * q][0], s[mt][4 * q][1], s[mt][4 * q + 1][0], s[mt][4 * q + 1][1]);
      a[mt][1] = pack_e4m3x4(s[mt][4 * q][2], s[mt][4 * q][3], s[mt][4 * q + 1][2], s[mt][4 * q + 1][3]);
      a[mt][2] = pack_e4m3x4(s[mt][4 * q + 2][0], s[mt][4 * q + 2][1], s[mt][4 * q + 3][0], s[mt][4 * q + 3][1]);
      a[mt][3] = pack_e4m3x4(s[mt][4 * q + 2][2], s[mt][4 * q + 2][3], s[mt][4 * q + 3][2], s[mt][4 * q + 3][3]);
    }
#pragma unroll
    for (int c = 0; c < HEAD_DIM / 16; ++c) {
      unsigned r[4];  // keys 0-7, 8-15, 16-23, 24-31 of this 32-key step, chunk c
      ldsm_x4_t(r, sV + chunk_off<RB_IN>(q * 32 + lane, c));
      const unsigned ev0 = __byte_perm(r[0], r[1], 0x6420), ev1 = __byte_perm(r[2], r[3], 0x6420);  // column 2g
      const unsigned od0 = __byte_perm(r[0], r[1], 0x7531), od1 = __byte_perm(r[2], r[3], 0x7531);  // column 2g+1
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_e4m3(ws.o[mt][2 * c], a[mt], ev0, ev1);
        mma_e4m3(ws.o[mt][2 * c + 1], a[mt], od0, od1);
      }
    }
  }
#else       // knob PV_FP8=0: fp16 P·V, 16 keys per mma
#pragma unroll
  for (int kk = 0; kk < TILE_N / 16; ++kk) {
    unsigned a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      a[mt][0] = pack_h2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
      a[mt][1] = pack_h2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
      a[mt][2] = pack_h2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
      a[mt][3] = pack_h2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
    }
#if IN_FP8
#pragma unroll
    for (int dq = 0; dq < HEAD_DIM / 32; ++dq) {
      unsigned r[4];  // r[0], r[1]: keys 0-7, 8-15 of chunk 2dq; r[2], r[3]: of chunk 2dq+1
      ldsm_x4_t(r, sV + chunk_off<RB_IN>(kk * 16 + (lane & 15), dq * 2 + (lane >> 4)));
#pragma unroll
      for (int j = 0; j < 2; ++j) {
        const unsigned ev0 = fp8x2_to_h2(__byte_perm(r[2 * j], 0, 0x0020));      // column 2g, keys 2t, 2t+1
        const unsigned ev1 = fp8x2_to_h2(__byte_perm(r[2 * j + 1], 0, 0x0020));  // ... keys 8+2t, 9+2t
        const unsigned od0 = fp8x2_to_h2(__byte_perm(r[2 * j], 0, 0x0031));      // column 2g+1
        const unsigned od1 = fp8x2_to_h2(__byte_perm(r[2 * j + 1], 0, 0x0031));
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
          mma_pv(ws.o[mt][4 * dq + 2 * j], a[mt], ev0, ev1);
          mma_pv(ws.o[mt][4 * dq + 2 * j + 1], a[mt], od0, od1);
        }
      }
    }
#else
#pragma unroll
    for (int dp = 0; dp < HEAD_DIM / 16; ++dp) {
      unsigned b[4];
      ldsm_x4_t(b, sV + chunk_off<RB_H>(kk * 16 + (lane & 15), dp * 2 + (lane >> 4)));
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_pv(ws.o[mt][2 * dp], a[mt], b[0], b[1]);
        mma_pv(ws.o[mt][2 * dp + 1], a[mt], b[2], b[3]);
      }
    }
#endif
  }
#endif  // PV_FP8
}

// Does this warp have anything to do with key tile kv0? (all rows past S, or all keys after all rows)
__device__ __forceinline__ bool warp_active(const Work& w, int wrow, int kv0) {
#if MMA_PATH == 2  // knob MMA_PATH=2: a wgmma takes the whole warpgroup, so the question is per 64 rows
  const int first = w.q0 + (wrow & ~63);
  return first < w.S && !(w.causal && kv0 > first + 63);
#else
  const int first = w.q0 + wrow;
  return first < w.S && !(w.causal && kv0 > first + WM - 1);
#endif
}

// Copies that landed (cp.async / plain stores: the generic proxy) -> visible to wgmma's operand reads
// (the async proxy). Each thread fences its own copies before the barrier that publishes them.
__device__ __forceinline__ void async_proxy_fence() {
#if MMA_PATH >= 2  // knob MMA_PATH=2 or 3
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// MMA_PATH=2 with IN_FP8=1: wgmma's e4m3 B operand must be K-major, and V is MN-major for P·V, so
// V_j is widened once into an fp16 copy (the layout of the fp16 path's V tiles) that P·V reads;
// Q·Kᵀ stays e4m3 x e4m3. The copy is rewritten every tile: the barrier at the top of tile j
// already orders it after tile j-1's P·V, and a second barrier publishes it to the warpgroups.
constexpr bool WIDE_V = MMA_PATH == 2 && IN_FP8;
// V_REGS=1: this thread's 16-byte chunks of V_j (fp8), loaded from global memory (rows past S: zeros),
// then widened and stored into the fp16 copy, in tile_off's layout.
constexpr int VR_TOTAL = TILE_N * RB_IN / 16;
constexpr int VR_CHUNKS = V_REGS ? (VR_TOTAL + NT - 1) / NT : 1;
__device__ __forceinline__ void load_v_regs(uint4 (&vr)[VR_CHUNKS], const Work& w, int kv0, int tid) {
  const int valid = min(TILE_N, w.S - kv0);
#pragma unroll
  for (int i = 0; i < VR_CHUNKS; ++i) {
    const int idx = tid + i * NT, r = idx / (RB_IN / 16), c = idx % (RB_IN / 16);
    vr[i] = idx < VR_TOTAL && r < valid
                ? __ldg(reinterpret_cast<const uint4*>(w.gV + (long long)(kv0 + r) * RB_IN + c * 16))
                : make_uint4(0u, 0u, 0u, 0u);
  }
}
__device__ __forceinline__ void store_v_wide(unsigned char* smem, const uint4 (&vr)[VR_CHUNKS], int tid) {
#pragma unroll
  for (int i = 0; i < VR_CHUNKS; ++i) {
    const int idx = tid + i * NT, r = idx / (RB_IN / 16), c = idx % (RB_IN / 16);
    if (idx < VR_TOTAL) {
      uint4 lo, hi;
      fp8x16_to_h16(vr[i], lo, hi);
      *reinterpret_cast<uint4*>(vh_buf(smem, 0) + tile_off<TILE_N, RB_H>(r, 2 * c)) = lo;
      *reinterpret_cast<uint4*>(vh_buf(smem, 0) + tile_off<TILE_N, RB_H>(r, 2 * c + 1)) = hi;
    }
  }
}

__device__ __forceinline__ void widen_v(unsigned char* smem, int st, int tid) {
  if (WIDE_V) {  // knob IN_FP8=1 with MMA_PATH=2
    convert_tile<TILE_N>(vh_buf(smem, 0), v_stage(smem, st), tid, NT);
    async_proxy_fence();
    __syncthreads();
  }
}

#if WG_PIPE
// WG_PIPE=1 (MMA_PATH=2), per K/V tile j of an active warpgroup:
//   issue S = Q·K_jᵀ, then O += P_{j-1}·V_{j-1} behind it; wait for S only  (wg_pipe_issue; no
//   branch on "is there a previous tile", which would make ptxas serialise the wgmmas: P = 0 instead)
//   mask + online softmax of tile j on the CUDA cores while P·V runs      (warp_scores, alpha kept)
//   wait for P·V, O *= alpha_j; P_j -> fp16 A-fragments for the next tile   (wg_pipe_rescale)
// The last P·V (or that of a warpgroup that leaves early under causal) runs in wg_pipe_flush.
__device__ __forceinline__ void wg_pipe_issue(WarpState& ws, Scores& s, unsigned (&pa)[TILE_N / 16][4],
                                              const unsigned char* sQ, const unsigned char* sK,
                                              const unsigned char* sV_prev, int wrow) {
  wg_keep(pa);
  wg_keep(ws.o[0]);
  wg_fence();
  wg_qk_issue(s[0], sQ, sK, wrow);
  wg_commit();
  wg_pv_issue(ws.o[0], pa, sV_prev);  // first tile: pa = 0 and sV_prev = V_0 (finite), adds exact zeros
  wg_commit();
  wg_wait<1>();                       // S done; P·V may still run
  wg_keep(s[0]);
}
__device__ __forceinline__ void wg_pipe_rescale(WarpState& ws) {
  wg_wait<0>();
  wg_keep(ws.o[0]);
#pragma unroll
  for (int h = 0; h < 2; ++h)
#pragma unroll
    for (int dt = 0; dt < NTD; ++dt) {
      ws.o[0][dt][2 * h] *= ws.alpha[0][h];
      ws.o[0][dt][2 * h + 1] *= ws.alpha[0][h];
    }
}
__device__ __forceinline__ void wg_pipe_flush(WarpState& ws, unsigned (&pa)[TILE_N / 16][4], const unsigned char* sV) {
  wg_keep(pa);
  wg_keep(ws.o[0]);
  wg_fence();
  wg_pv_issue(ws.o[0], pa, sV);
  wg_commit();
  wg_wait<0>();
  wg_keep(ws.o[0]);
}
#endif  // WG_PIPE

#if SPLIT_KV > 1
// Knob SPLIT_KV>1: after the key loop. Row tiles owned by another split go there (st.async into its
// mailbox slot for this split); the owned ones wait for their mail and merge it in registers:
//   M = max(m, m_z),  O = O 2^(m - M) + O_z 2^(m_z - M),  l = l 2^(m - M) + l_z 2^(m_z - M)
// (a split with no keys for a row has m = -inf and weight 0). l stays per thread: the epilogue's
// quad sum is the same whichever split a column's keys came from.
__device__ __forceinline__ void split_exchange(WarpState& ws, unsigned char* smem, int wrow, int lane) {
  const int me = blockIdx.z;
  split_wait_peers();
  bool owner = false;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const int rt = wrow / 16 + mt, z = rt_owner(rt);
    if (z == me) { owner = true; continue; }
    const int box = (me < z ? me : me - 1) * OWNED + rt_slot(rt);  // this split's slot at the owner
    const unsigned dst = peer_addr(smem_u32(smem + OFF_MAIL + box * PART_BYTES + lane * 16), z);
    const unsigned mbar = peer_addr(smem_u32(smem + OFF_MAIL + MAIL_BYTES - 16), z);
#pragma unroll
    for (int dt = 0; dt < NTD; ++dt)
      st_async4(dst + dt * 512, ws.o[mt][dt][0], ws.o[mt][dt][1], ws.o[mt][dt][2], ws.o[mt][dt][3], mbar);
    st_async4(dst + NTD * 512, ws.m[mt][0], ws.m[mt][1], ws.l[mt][0], ws.l[mt][1], mbar);
  }
  if (!owner) return;
  split_wait_mail(smem);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    const int rt = wrow / 16 + mt;
    if (rt_owner(rt) != me) continue;
#pragma unroll
    for (int k = 0; k < SPLIT_KV - 1; ++k) {
      const float4* box = reinterpret_cast<const float4*>(smem + OFF_MAIL + (k * OWNED + rt_slot(rt)) * PART_BYTES) + lane;
      float4 part[PART_F4];
#pragma unroll
      for (int f = 0; f < PART_F4; ++f) part[f] = box[f * 32];
      const float mz[2] = {part[NTD].x, part[NTD].y}, lz[2] = {part[NTD].z, part[NTD].w};
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float a, b;
        ws.m[mt][h] = merge_scales(ws.m[mt][h], mz[h], a, b);
        ws.l[mt][h] = ws.l[mt][h] * a + lz[h] * b;
#pragma unroll
        for (int dt = 0; dt < NTD; ++dt) {
          const float2 o = h == 0 ? make_float2(part[dt].x, part[dt].y) : make_float2(part[dt].z, part[dt].w);
          ws.o[mt][dt][2 * h] = ws.o[mt][dt][2 * h] * a + o.x * b;
          ws.o[mt][dt][2 * h + 1] = ws.o[mt][dt][2 * h + 1] * a + o.y * b;
        }
      }
    }
  }
}
#endif

// Normalise and store straight from registers (SPLIT_KV>1: the row tiles this block owns).
__device__ __forceinline__ void store_o(const WarpState& ws, const Work& w, int wrow, int lane) {
  const int g = lane >> 2, tq = lane & 3;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#if SPLIT_KV > 1
    if (rt_owner(wrow / 16 + mt) != (int)blockIdx.z) continue;
#endif
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#if ROWSUM_MMA  // knob ROWSUM_MMA=1: every column of the ones block holds the whole row's sum
      const float l = ws.lsum[0][2 * h];
#else
      float l = ws.l[mt][h];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
#endif
      const float inv = l > 0.f ? w.v_descale / l : 0.f;
      const int row = w.q0 + wrow + mt * 16 + g + 8 * h;
#if O_WIDE  // MMA_PATH=3: columns 8 dt .. 8 dt + 7 whole from thread dt % 4 of the quad, a 4 x 4 transpose of the
      // quad's words (two exchanges, xor 2 then xor 1, by every lane), then a 16-byte store per 4 tiles: 4x fewer
      // stores than a word each, which at an item's end took 3 400 clocks (bench/timeline.py, docs/results/sdpa-fa3.md)
      {
        __half* out = w.O + (long long)row * HEAD_DIM;
#pragma unroll
        for (int d4 = 0; d4 < NTD; d4 += 4) {
          unsigned x[4];
#pragma unroll
          for (int i = 0; i < 4; ++i) x[i] = pack_h2(ws.o[mt][d4 + i][2 * h] * inv, ws.o[mt][d4 + i][2 * h + 1] * inv);
          const bool hi2 = tq & 2, hi1 = tq & 1;
          // M[s][i]: quad thread s's word of tile d4 + i; thread t ends with M[0..3][t]. xor 2: with c = bit 1 of t,
          // keep the words of tiles 2c, 2c + 1 and swap the other two with thread t ^ 2
          unsigned a0 = __shfl_xor_sync(0xffffffffu, hi2 ? x[0] : x[2], 2);
          unsigned a1 = __shfl_xor_sync(0xffffffffu, hi2 ? x[1] : x[3], 2);
          // y0, y1 = M[t & ~2][2c], M[t & ~2][2c + 1]; y2, y3 = M[t | 2][2c], M[t | 2][2c + 1]
          unsigned y0 = hi2 ? a0 : x[0], y1 = hi2 ? a1 : x[1], y2 = hi2 ? x[2] : a0, y3 = hi2 ? x[3] : a1;
          // xor 1: keep column 2c + (bit 0 of t), swap column 2c + 1 - (bit 0) with thread t ^ 1
          unsigned b0 = __shfl_xor_sync(0xffffffffu, hi1 ? y0 : y1, 1);
          unsigned b1 = __shfl_xor_sync(0xffffffffu, hi1 ? y2 : y3, 1);
          uint4 v;
          v.x = hi1 ? b0 : y0;  // word of quad thread 0
          v.y = hi1 ? y1 : b0;  // thread 1
          v.z = hi1 ? b1 : y2;  // thread 2
          v.w = hi1 ? y3 : b1;  // thread 3
          if (row < w.S) *reinterpret_cast<uint4*>(out + (d4 + tq) * 8) = v;
        }
      }
#else
      if (row < w.S) {
        __half* out = w.O + (long long)row * HEAD_DIM;
#if IN_FP8 && MMA_PATH == 1  // columns 16p + 4t .. +3 from tiles 2p (even columns) and 2p+1 (odd): see warp_pv
#pragma unroll
        for (int p = 0; p < NTD / 2; ++p)
          *reinterpret_cast<uint2*>(out + 16 * p + 4 * tq) =
              make_uint2(pack_h2(ws.o[mt][2 * p][2 * h] * inv, ws.o[mt][2 * p + 1][2 * h] * inv),
                         pack_h2(ws.o[mt][2 * p][2 * h + 1] * inv, ws.o[mt][2 * p + 1][2 * h + 1] * inv));
#else       // columns 8 dt + 2t, +1
#pragma unroll
        for (int dt = 0; dt < NTD; ++dt)
          *reinterpret_cast<unsigned*>(out + dt * 8 + tq * 2) = pack_h2(ws.o[mt][dt][2 * h] * inv, ws.o[mt][dt][2 * h + 1] * inv);
#endif
      }
#endif
    }
  }
}

#if MMA_PATH == 3
// =============================================================================================
// MMA_PATH=3: FlashAttention-3 (Shah, Bikshandi, Zhang, Thakkar, Ramani, Dao, 2024).
//
// Warp specialisation. The last warpgroup is the producer: one thread issues the TMA loads of
// K_j and V_j into a STAGES-deep ring; each stage has a FULL mbarrier (the TMA's bytes) and an
// EMPTY one (an arrival per consumer warp once its product has read the stage). With fp8 inputs
// the producer warpgroup also rewrites V_j for P·V into a ring of its own (FA3_X_FULL):
//   knob PV_FP8=1: transposed (keys contiguous), so that P·V is an e4m3 wgmma (its B operand must
//                  be K-major), with the key order of P's registers (transpose_v);
//   knob PV_FP8=0: widened to fp16 (P·V in fp16, as the other paths' fp8 gate expects).
// setmaxnreg hands the producer's registers to the consumers (REG_PRODUCER, REG_CONSUMER).
//
// Asynchrony. Each consumer warpgroup owns 64 query rows and, per key tile j,
//     issue S_j = Q·K_jᵀ;  issue O += P_{j-1}·V_{j-1};                  (one turn: PINGPONG)
//     WG_PIPE=1: wait for S_j; softmax_j under the P·V; wait for the P·V
//     WG_PIPE=0: wait for both; softmax_j
//     O *= alpha_j;  P_j = exp2(S_j - m_j) packed for the next P·V
// and the last P·V after the loop. With two or three consumer warpgroups, PINGPONG=1 makes them take turns
// at issuing (named barriers BAR_PP + warpgroup), so that one's softmax runs while the other's
// products occupy the tensor cores.
//
// Work. A work item is one query tile of one (b, h). PERSIST=0: a block per item. PERSIST=1: a block
// per SM takes items blockIdx.x, + gridDim.x, ...; the producer loads the next item's Q (into the
// other of two Q buffers) and K/V while the consumers finish this one, so a block's start and its
// epilogue no longer leave the tensor cores idle. The ring's position runs on across items. The consumers
// wait for the next item's Q before they store this one's O (a fence after the stores would wait for them).
// Causal: an item's query tiles are taken last first (the most keys first, the fewest last).
// =============================================================================================
// Trace events (SDPA_TRACE): a consumer warpgroup's step j: TR_READY its operands are in (before the turn),
// TR_TURN it may issue, TR_ISSUED both products issued, TR_S S_j landed, TR_SOFTMAX softmax j done, TR_PV
// the P·V landed, TR_END P_j packed. The producer's tile g: TR_READY before waiting for the stage,
// TR_TURN its TMA loads issued, TR_ISSUED (fp8) the rewrite of tile g - 1 published.
enum : int { TR_READY = 0, TR_TURN = 1, TR_ISSUED = 2, TR_S = 3, TR_SOFTMAX = 4, TR_PV = 5, TR_END = 6 };
// An item's boundary, at the ring position of the next item's first tile (no step stamps it): TB_END the last
// tile's P·V waits for its turn, TB_PV_ISSUED, TB_PV landed, TB_STORED the epilogue done, TB_Q the next Q landed,
// TB_K its K_0 (ITEM_OVERLAP: and the last V) landed, TB_S S_0 landed, TB_P P_0 packed. The producer: TP_Q_WAIT
// before it waits for the Q buffer, TP_Q_ISSUED Q's copies issued.
enum : int { TB_END = 0, TB_PV_ISSUED = 1, TB_PV = 2, TB_STORED = 3, TB_Q = 4, TB_K = 5, TB_S = 6, TB_P = 7 };
enum : int { TP_Q_WAIT = 3, TP_Q_ISSUED = 4 };
__device__ __forceinline__ void trace(int g, int ev) {
#ifdef SDPA_TRACE
  const unsigned b = blockIdx.y * gridDim.x + blockIdx.x;
  if (b < SDPA_TRACE && (threadIdx.x & 127) == 0 && g < 64) sdpa_trace[b][threadIdx.x >> 7][g][ev] = clock64();
#endif
}
constexpr bool XFORM_V = IN_FP8;                 // the producer rewrites V (transposed or widened)
// mbarriers, STAGES each: K landed, K free, V landed (TMA), V free (its P·V is done), X written;
// then per Q buffer: Q landed (the producer warpgroup's cp.async), Q free (its last Q·Kᵀ is done)
enum : int { FA3_K_FULL = 0, FA3_K_EMPTY = 1, FA3_V_FULL = 2, FA3_V_EMPTY = 3, FA3_X_FULL = 4 };
static_assert(8 * (5 * STAGES + 4) <= 160, "MMA_PATH=3: the mbarriers must fit the 160 bytes they are given");
__device__ __forceinline__ unsigned fa3_bar(const Work& w, int kind, int st) { return w.tma_bar + 8 * (kind * STAGES + st); }
__device__ __forceinline__ unsigned q_full_bar(const Work& w, int b) { return w.tma_bar + 8 * (5 * STAGES + b); }
__device__ __forceinline__ unsigned q_empty_bar(const Work& w, int b) { return w.tma_bar + 8 * (5 * STAGES + 2 + b); }
__device__ __forceinline__ unsigned char* q_buf(unsigned char* smem, int b) { return smem + OFF_Q + b * TILE_M * RS_Q; }

// What every item shares (the kernel's arguments), and item idx's Work. Thread 0 writes it once into
// shared memory after the mbarriers, where both roles read it. (The spills PERSIST first had were the
// producer's register budget, not this: REG_PRODUCER below.)
struct Fa3Problem {
  const unsigned char *Q, *K, *V;
  __half* O;
  int S, causal, n_q, items;        // query tiles per (b, h); items = n_q * B * H
  float scale_log2, v_descale;
  unsigned long long kmap, vmap;
  unsigned bars;
#if STREAM_K
  float* partial;                   // knob STREAM_K=1: the split items' halves (partial_o), and a ticket a warp
  int* tickets;                     // and boundary (split_counter, zero between launches)
  int sk_whole;                          // items 0 .. sk_whole - 1 go whole, every gridDim.x-th (the waves before the tail)
  int sk_first, sk_t0, sk_last, sk_t1;  // this block's share of the rest: item sk_first from tile sk_t0 .. sk_last to sk_t1
#endif
};
#if STREAM_K
// knob STREAM_K=1, non-causal (Osama et al., Stream-K, 2023, its data-parallel + stream-K hybrid): the first waves
// but one take whole items, every G-th (G blocks); the rest, between G and 2G items, is one row of T = rest * n key
// tiles, and block b takes [b T / G, (b+1) T / G) of it: at least an item's worth, so an item falls into two blocks
// at most. (All items as one row, a block's share is consecutive items of one head, so that all heads are in flight
// at once: fp16 D=128 long, 64 MB of K and V against 50 MB of L2, measured 1.4x slower.) Causal items differ in
// length: whole items, as with STREAM_K=0.
__device__ __forceinline__ bool sk_on(const Fa3Problem& P) { return !P.causal; }
__device__ __forceinline__ void sk_share(Fa3Problem& P) {
  const int G = gridDim.x;
  P.sk_whole = max(0, P.items / G - 1) * G;
  const long long n = (P.S + TILE_N - 1) / TILE_N, T = n * (P.items - P.sk_whole);
  const long long lo = T * blockIdx.x / G, hi = T * (blockIdx.x + 1) / G;
  P.sk_first = P.sk_whole + (int)(lo / n);
  P.sk_t0 = (int)(lo % n);
  P.sk_last = P.sk_whole + (int)((hi - 1) / n);
  P.sk_t1 = (int)((hi - 1) % n) + 1;
}
#endif
__device__ __forceinline__ Work fa3_work(const Fa3Problem& P, int idx) {
  Work w;
  const int bh = idx / P.n_q, r = idx % P.n_q;
  w.S = P.S;
  w.causal = P.causal;
  w.bh = bh;
  w.q0 = (P.causal ? P.n_q - 1 - r : r) * TILE_M;
  const long long head = (long long)bh * P.S * HEAD_DIM;
  w.gQ = P.Q + (head + (long long)w.q0 * HEAD_DIM) * ESZ;
  w.gK = P.K + head * ESZ;
  w.gV = P.V + head * ESZ;
  w.O = P.O + head;
  w.scale_log2 = P.scale_log2;
  w.v_descale = P.v_descale;
  w.t_begin = 0;
  w.n_tiles = ((P.causal ? min(P.S, w.q0 + TILE_M) : P.S) + TILE_N - 1) / TILE_N;
  w.kmap = P.kmap;
  w.vmap = P.vmap;
  w.tma_bar = P.bars;
#if STREAM_K  // knob STREAM_K=1: the part of item idx's tiles that falls into this block's share
  w.part = 0;
  if (sk_on(P) && idx >= P.sk_whole) {
    const int n = w.n_tiles;
    const int t0 = idx == P.sk_first ? P.sk_t0 : 0, t1 = idx == P.sk_last ? P.sk_t1 : n;
    w.t_begin = t0;
    w.n_tiles = t1 - t0;
    if (t1 - t0 < n) w.part = t0 == 0 ? (int)blockIdx.x + 1 : -(int)blockIdx.x;  // boundary c: blocks c - 1 and c
  }
#endif
  return w;
}
// This block's items: PERSIST=1 every gridDim.x-th from blockIdx.x (STREAM_K=1: those its share of the tiles
// touches); PERSIST=0 the one its grid cell names. Past the last, P.items.
__device__ __forceinline__ int fa3_first_item(const Fa3Problem& P) {
#if STREAM_K
  if (sk_on(P)) return P.sk_whole > 0 ? (int)blockIdx.x : P.sk_first;
#endif
  return PERSIST ? (int)blockIdx.x : (int)blockIdx.y * P.n_q + (int)blockIdx.x;
}
__device__ __forceinline__ int fa3_next_item(const Fa3Problem& P, int idx) {
#if STREAM_K
  if (sk_on(P)) {
    if (idx < P.sk_whole) return idx + (int)gridDim.x < P.sk_whole ? idx + (int)gridDim.x : P.sk_first;
    return idx < P.sk_last ? idx + 1 : P.items;
  }
#endif
  return PERSIST ? idx + (int)gridDim.x : P.items;
}
// Wait for phase (j / STAGES) of barrier kind at tile j's stage; for an EMPTY barrier pass the
// tile whose stage is being refilled minus STAGES, i.e. wait for its release.
__device__ __forceinline__ void fa3_wait(const Work& w, int kind, int j) {
  mbar_wait(fa3_bar(w, kind, j % STAGES), (j / STAGES) & 1);
}
// A consumer warp is done with tile j's stage of kind (after its wgmma.wait covering the product).
__device__ __forceinline__ void fa3_release(const Work& w, int kind, int j, int lane) {
  if (lane == 0) mbar_arrive(fa3_bar(w, kind, j % STAGES));
}

// Stage st of the transposed e4m3 V ring (PV_FP8=1).
__device__ __forceinline__ unsigned char* vt_stage(unsigned char* smem, int st) { return smem + OFF_VT + st * VT_STAGE_BYTES; }
// The stage that P·V reads for tile j: V itself (fp16), its widened copy, or its transpose.
__device__ __forceinline__ const unsigned char* pv_stage(unsigned char* smem, int st) {
#if PV_FP8
  return vt_stage(smem, st);
#elif IN_FP8
  return vh_buf(smem, st);
#else
  return v_stage(smem, st);
#endif
}

#if PV_FP8
// knob PV_FP8=1. P·V as e4m3: P's A operand (m64nNk32: lane (g, t) holds keys 4t .. 4t+3 and
// 16 + 4t .. of a 32-key step, rows g and g + 8) is packed straight from the score registers, whose
// columns are 2t, 2t+1 of each 8-key tile: k-slot 4t + i of a 16-key block holds key 2t, 2t+1, 8+2t,
// 9+2t for i = 0..3. Summing over keys in any order is the same sum, so V's transpose puts key
// (16b + {2t, 2t+1, 8+2t, 9+2t}) at k-slot 16b + 4t + {0..3} too, and nothing is shuffled.
// P is scaled by 2^P_SHIFT (warp_scores) to keep small probabilities out of e4m3's subnormals.
typedef unsigned PTile[TILE_N / 32][4];
__device__ __forceinline__ void fa3_pack_p(PTile& a, const float (&p)[NTN][4]) {
#pragma unroll
  for (int q = 0; q < TILE_N / 32; ++q) {
    a[q][0] = pack_e4m3x4(p[4 * q][0], p[4 * q][1], p[4 * q + 1][0], p[4 * q + 1][1]);
    a[q][1] = pack_e4m3x4(p[4 * q][2], p[4 * q][3], p[4 * q + 1][2], p[4 * q + 1][3]);
    a[q][2] = pack_e4m3x4(p[4 * q + 2][0], p[4 * q + 2][1], p[4 * q + 3][0], p[4 * q + 3][1]);
    a[q][3] = pack_e4m3x4(p[4 * q + 2][2], p[4 * q + 2][3], p[4 * q + 3][2], p[4 * q + 3][3]);
  }
}
// The transposed tile: HEAD_DIM rows of TILE_N keys, K-major. TILE_N 64 or 128: TILE_N-byte rows in the
// 64- or 128-byte swizzle (like K's rows for Q·Kᵀ). Wider tiles (160 .. 224 keys, no power of two) go in
// panels of 32 keys, each HEAD_DIM rows (ROWSUM_MMA: + 8 of ones) of 32 bytes in the 32-byte swizzle (chunk c of row d at
// c ^ ((d / 4) % 2)): one panel per P·V k-step. Byte offset of 16-key chunk b of row d:
constexpr bool VT_PANELS = TILE_N != 64 && TILE_N != 128;
constexpr int VT_PANEL_BYTES = VT_ROWS * 32;  // one 32-key panel: HEAD_DIM (+ 8, ROWSUM_MMA) rows of 32 bytes
__device__ __forceinline__ int vt_off(int d, int b) {
  if (VT_PANELS) return (b >> 1) * VT_PANEL_BYTES + d * 32 + (((b & 1) ^ ((d >> 2) & 1)) << 4);
  return tile_off<HEAD_DIM, TILE_N>(d, b);
}
// O += P·V: B is the transposed tile; one m64n{HEAD_DIM}k32 per 32 keys.
// knob ROWSUM_MMA=1: N = HEAD_DIM + 8, the last 8 rows of the tile ones, their products the row sums of P.
__device__ __forceinline__ void fa3_pv_issue(WarpState& ws, const PTile& a, const unsigned char* sVt) {
  constexpr unsigned ROWB = VT_PANELS ? 32 : TILE_N, SBO = 8 * ROWB;
  constexpr unsigned LAYOUT = VT_PANELS ? 3 : TILE_N == 64 ? 2 : 1;  // 32-, 64-, 128-byte swizzle
  const unsigned long long dv = wg_desc(sVt, 16, SBO, LAYOUT);
#pragma unroll
  for (int q = 0; q < TILE_N / 32; ++q) {
    const unsigned long long b = dv + ((VT_PANELS ? q * VT_PANEL_BYTES : q * 32) >> 4);
#if ROWSUM_MMA
    wg_rs8s(ws.o[0], ws.lsum, a[q], b);
#else
    wg_rs8(ws.o[0], a[q], b);
#endif
  }
}
__device__ __forceinline__ void stsm_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n"
               ::"r"(addr), "r"(r0), "r"(r1), "r"(r2), "r"(r3) : "memory");
}
// V (TILE_N keys x HEAD_DIM bytes, the TMA's swizzled rows) -> Vt (HEAD_DIM rows x TILE_N keys, in
// vt_off's layout), by the producer warpgroup's 4 warps. One step moves 16 keys
// x 32 columns: ldmatrix.trans of four 8x8 b16 matrices (keys 0-7 / 8-15 of two 16-byte column chunks)
// gives lane (g, t) the key pairs (2t, 2t+1) and (8+2t, 9+2t) of columns 2g, 2g+1; one byte permute
// per column makes the 4 keys of that column in P's k-slot order; stmatrix writes them to rows 2g,
// 2g+1 at k-slots 4t .. 4t+3 (FlashAttention-3's in-kernel transpose: LDSM.T, PRMT, STSM).
__device__ __forceinline__ void transpose_v(unsigned char* vt, const unsigned char* v, int ptid) {
  const int pw = ptid >> 5, lane = ptid & 31;
  constexpr int KB = TILE_N / 16, CP = HEAD_DIM / 32;  // 16-key blocks, 32-column steps
  constexpr int BSTEP = 4 / CP;                         // warps sharing a column step (HEAD_DIM 128: 1, 64: 2)
  static_assert(CP * BSTEP == 4 && KB % BSTEP == 0, "transpose_v: 4 warps split the steps evenly");
  // Warp pw takes column step pw % CP and every BSTEP-th key block from pw / CP: each address is a lane's
  // base plus a multiple of the step, about 14 instructions a step. (A loop over u = pw, pw + 4, ... with
  // b = u % KB, cp = u / KB ran 33 a step, a quarter of all the kernel issued at fp8 D=128 with 192-key
  // tiles (ncu, docs/results/sdpa-fa3.md): issue slots the consumer warps on the same schedulers wanted.)
  const int cp = pw % CP, b0 = pw / CP;
  // Lane bases: 16 more key rows of V are 16 * RB_IN bytes on (its swizzle repeats every 8 rows); with
  // 32-key panels, key block b of row d is block b % 2's place, (b / 2) panels on.
  const unsigned char* src = v + tile_off<TILE_N, RB_IN>(8 * ((lane >> 3) & 1) + (lane & 7), 2 * cp + (lane >> 4));
  const int d = 32 * cp + 16 * (lane >> 4) + 2 * (lane & 7) + ((lane >> 3) & 1);
  const unsigned dst = smem_u32(vt);
  const unsigned dst_even = dst + vt_off(d, 0), dst_odd = dst + vt_off(d, 1);
#pragma unroll 4  // (whole, ptxas hoists the loads past the producer's registers and spills)
  for (int i = 0; i < KB / BSTEP; ++i) {
    const int b = b0 + BSTEP * i;
    unsigned r[4];
    ldsm_x4_t(r, src + b * 16 * RB_IN);
    stsm_x4(VT_PANELS ? ((b & 1) ? dst_odd : dst_even) + (b >> 1) * VT_PANEL_BYTES : dst + vt_off(d, b),
            __byte_perm(r[0], r[1], 0x6420), __byte_perm(r[0], r[1], 0x7531),
            __byte_perm(r[2], r[3], 0x6420), __byte_perm(r[2], r[3], 0x7531));
  }
}
#else
// knob PV_FP8=0: P·V in fp16, P packed as MMA_PATH=2 does, V (or its widened copy) MN-major.
typedef unsigned PTile[TILE_N / 16][4];
__device__ __forceinline__ void fa3_pack_p(PTile& a, const float (&p)[NTN][4]) { wg_pack_p(a, p); }
__device__ __forceinline__ void fa3_pv_issue(WarpState& ws, const PTile& a, const unsigned char* sV) {
  wg_pv_issue(ws.o[0], a, sV);
}
#endif
#if ROWSUM_MMA
// knob ROWSUM_MMA=1: the ones rows of every stage, written once (the transposes never touch them)
__device__ __forceinline__ void fill_ones(unsigned char* smem, int ptid) {
  constexpr int PANELS = VT_PANELS ? TILE_N / 32 : 1, ONES = (VT_PANELS ? 32 : TILE_N) * 8;  // bytes a panel
  for (int i = ptid; i < STAGES * PANELS * ONES / 4; i += 128) {
    const int st = i / (PANELS * ONES / 4), r = i % (PANELS * ONES / 4), pn = r / (ONES / 4), wd = r % (ONES / 4);
    unsigned char* ones = smem + OFF_VT + st * VT_STAGE_BYTES + (VT_PANELS ? pn * VT_PANEL_BYTES + HEAD_DIM * 32
                                                                             : HEAD_DIM * TILE_N);
    reinterpret_cast<unsigned*>(ones)[wd] = 0x38383838u;  // e4m3 1.0 in every byte
  }
}
#endif

// Producer warpgroup. Per item: every thread copies its chunks of Q into the item's Q buffer once the
// consumers are done with the item two back (cp.async, counted by Q_FULL as each thread's copies land);
// thread 0 issues each K/V tile's TMA loads once its stages are free. With fp8 the whole warpgroup
// rewrites V one tile behind (so the next tile's load is in flight meanwhile) once the consumers are
// done with that X stage, fences it for wgmma's reads and publishes it. g counts tiles across items.
__device__ __forceinline__ void fa3_rewrite_v(const Work& w, unsigned char* smem, int g, int ptid) {
  const int st = g % STAGES;
  fa3_wait(w, FA3_V_FULL, g);
  if (g >= STAGES) fa3_wait(w, FA3_V_EMPTY, g - STAGES);
#if PV_FP8  // knob PV_FP8=1: transpose
  transpose_v(vt_stage(smem, st), v_stage(smem, st), ptid);
#else       // knob PV_FP8=0: widen
  convert_tile<TILE_N>(vh_buf(smem, st), v_stage(smem, st), ptid, 128);
#endif
  async_proxy_fence();
  named_sync(BAR_PRODUCER, 128);
  if (ptid == 0) mbar_arrive(fa3_bar(w, FA3_X_FULL, st));
}
// knob PERSIST=1, three consumer warpgroups, fp16, 128-key tiles: the producer copies Q a chunk at a time, so that its
// item loop fits 32 registers and leaves the consumers the 160 they need (unrolled, a 192-row Q's 12 copies took 48
// and left them 152: 80 bytes spilled and the wgmma serialised).
constexpr bool Q_LEAN = PERSIST && NUM_WARPS == 12 && !IN_FP8 && TILE_N >= 128;
constexpr int Q_UNROLL = Q_LEAN ? 1 : (USE_CP_ASYNC ? 16 : 2);
__device__ __forceinline__ void fa3_producer(const Fa3Problem& P, unsigned char* smem, int ptid) {
  constexpr int PANEL = RB_IN < 128 ? RB_IN : 128;  // bytes of a row per TMA box
#if ROWSUM_MMA
  fill_ones(smem, ptid);  // knob ROWSUM_MMA=1 (fenced for wgmma with the first rewritten tile, before its X_FULL)
#endif
  int g = 0;
  for (int idx = fa3_first_item(P), k = 0; idx < P.items; idx = fa3_next_item(P, idx), ++k) {
    const Work w = fa3_work(P, idx);
    const int b = k & 1;
    trace(g, TP_Q_WAIT);
    if (k >= 2) mbar_wait(q_empty_bar(w, b), ((k - 2) >> 1) & 1);
    load_tile<TILE_M, RB_IN, 128, Q_UNROLL>(q_buf(smem, b), w.gQ, min(TILE_M, P.S - w.q0), ptid);
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(q_full_bar(w, b)) : "memory");
    trace(g, TP_Q_ISSUED);
    for (int j = 0; j < w.n_tiles; ++j, ++g) {
      trace(g, TR_READY);
      if (ptid == 0) {
        const int st = g % STAGES, kv0 = (w.t_begin + j) * TILE_N;
        if (g >= STAGES) fa3_wait(w, FA3_K_EMPTY, g - STAGES);
        mbar_expect_tx(fa3_bar(w, FA3_K_FULL, st), TILE_N * RB_IN);
#pragma unroll
        for (int p = 0; p < RB_IN / PANEL; ++p)
          tma_load_3d(smem_u32(k_stage(smem, st)) + p * TILE_N * PANEL, w.kmap, p * PANEL / ESZ, kv0, w.bh,
                      fa3_bar(w, FA3_K_FULL, st));
        // fp16: the consumers read V's stage itself. fp8: its last reader was this warpgroup's rewrite
        // of tile g - STAGES, finished (barrier BAR_PRODUCER) an iteration ago at the latest.
        if (!XFORM_V && g >= STAGES) fa3_wait(w, FA3_V_EMPTY, g - STAGES);
        mbar_expect_tx(fa3_bar(w, FA3_V_FULL, st), TILE_N * RB_IN);
#pragma unroll
        for (int p = 0; p < RB_IN / PANEL; ++p)
          tma_load_3d(smem_u32(v_stage(smem, st)) + p * TILE_N * PANEL, w.vmap, p * PANEL / ESZ, kv0, w.bh,
                      fa3_bar(w, FA3_V_FULL, st));
      }
      trace(g, TR_TURN);
      if (XFORM_V && g >= 1) fa3_rewrite_v(w, smem, g - 1, ptid);
      trace(g, TR_ISSUED);
    }
  }
  if (XFORM_V && g >= 1) {
    Work w;
    w.tma_bar = P.bars;
    fa3_rewrite_v(w, smem, g - 1, ptid);
  }
}

// PINGPONG=1: wait for this warpgroup's turn to issue; pass the turn to the next, round the NWG consumer
// warpgroups (FlashAttention-3's scheduler barriers). Every warpgroup takes the same turns (each works on
// every item); the last one gives warpgroup 0 its first turn, so it skips its last hand-over: each
// barrier then sees as many arrivals as waits.
constexpr int NWG = NUM_WARPS / 4;  // consumer warpgroups (MMA_PATH=3)
__device__ __forceinline__ void pp_turn(int wg) {
#if PINGPONG
  named_sync(BAR_PP + wg, 2 * 128);
#endif
}
__device__ __forceinline__ void pp_pass(int wg, bool last) {
#if PINGPONG
  // (wg ^ 1 is (wg + 1) % 2: kept for two warpgroups so that their measured kernels' PTX stays the same)
  if (!(last && wg == NWG - 1)) named_arrive(BAR_PP + (NWG == 2 ? wg ^ 1 : (wg + 1) % NWG), 2 * 128);
#endif
}

// The softmax's results (P in s, the running max and sum, alpha) exist at this point of the program,
// before the wait for P·V: volatile asm statements keep their order, so nothing of the softmax may be
// placed after the wait by the compiler's front end (measured: fp8pv long128 388 -> 369 us).
__device__ __forceinline__ void fa3_softmax_done(WarpState& ws, float (&s)[NTN][4]) {
  wg_keep(s);
#pragma unroll
  for (int h = 0; h < 2; ++h) asm volatile("" : "+f"(ws.m[0][h]), "+f"(ws.l[0][h]), "+f"(ws.alpha[0][h])::"memory");
}
// A turn's two products: S = Q·K_gᵀ (ring position g) and O += P·V_{g-1}, issued together.
__device__ __forceinline__ void fa3_issue_turn(WarpState& ws, Scores& s, PTile& pa, unsigned char* smem,
                                               const unsigned char* sQ, int g, int wrow) {
  wg_keep(pa);
  wg_keep(ws.o[0]);
  wg_keep_sum(ws);
  wg_fence();
  wg_qk_issue(s[0], sQ, k_stage(smem, g % STAGES), wrow);
  wg_commit();
  fa3_pv_issue(ws, pa, pv_stage(smem, (g - 1) % STAGES));
  wg_commit();
}
#if EXP_BEFORE_MAX  // knob EXP_BEFORE_MAX=1
// S = Q·Kᵀ again, by this warp alone, from global memory (mma.sync, its fragments loaded straight from Q's and K's
// rows: 4 bytes at 4t of each 16 of a 32-byte k-step, fp16 or e4m3 alike), for the rare tile whose probabilities
// went past P_RESCORE after they had overwritten the scores. K_j and Q are not kept in shared memory for it: the
// producer needs K_j's stage back as early as before (held to the softmax's end, it waited 3x longer for a stage).
// The head's pointers come from the problem in shared memory (the consumers' Work need not keep them), and rows and
// keys past S are clamped rather than predicated (predicated, fp16 D=64 with three consumer warpgroups spilled).
__device__ __forceinline__ void warp_rescore(float (&s)[NTN][4], const Fa3Problem& P, const Work& w, int wrow, int kv0,
                                             int lane) {
  const int g = lane >> 2, t4 = (lane & 3) * 4;
  // rows g and g + 8 of the warp's 16, keys g of each 8. Past S they read row S - 1: such a row is never stored,
  // such a key is masked.
  const long long head = (long long)w.bh * w.S;
  const unsigned char* q0 = P.Q + (head + min(w.q0 + wrow + g, w.S - 1)) * RB_IN + t4;
  const unsigned char* q1 = P.Q + (head + min(w.q0 + wrow + g + 8, w.S - 1)) * RB_IN + t4;
#pragma unroll
  for (int nt = 0; nt < NTN; ++nt) {
    s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
    const unsigned char* k = P.K + (head + min(kv0 + nt * 8 + g, w.S - 1)) * RB_IN + t4;
#pragma unroll 1
    for (int c = 0; c < RB_IN; c += 32) {
      const unsigned a[4] = {__ldg((const unsigned*)(q0 + c)), __ldg((const unsigned*)(q1 + c)),
                             __ldg((const unsigned*)(q0 + c + 16)), __ldg((const unsigned*)(q1 + c + 16))};
      mma_qk(s[nt], a, __ldg((const unsigned*)(k + c)), __ldg((const unsigned*)(k + c + 16)));
    }
  }
}
#endif
// Tile j's softmax (ring position gj), after K_j (and at the item's last tile Q) are released. pv_done: P_{j-1}·V_{j-1}
// is done (WG_PIPE=0), and V_{j-1} is released too. Returns true where fa3_redo must recompute the scores (knob
// EXP_BEFORE_MAX=1).
__device__ __forceinline__ bool fa3_scores(const Work& w, const unsigned char* sQ, int qb, int gj, int j, WarpState& ws,
                                           Scores& s, int wrow, int lane, bool mask, bool pv_done) {
  fa3_release(w, FA3_K_EMPTY, gj, lane);
  if (pv_done) fa3_release(w, FA3_V_EMPTY, gj - 1, lane);
  if (j == w.n_tiles - 1 && lane == 0) mbar_arrive(q_empty_bar(w, qb));
#if EXP_BEFORE_MAX  // knob EXP_BEFORE_MAX=1: the exponentials against the running max, the tile's max after them
  if (mask) mask_scores(s, w, w.q0 + wrow, (w.t_begin + j) * TILE_N, lane);
  return softmax_before_max(ws, s[0], w);
#else
  warp_scores(ws, s, sQ, nullptr, wrow, lane, w, (w.t_begin + j) * TILE_N, mask);
  return false;
#endif
}
// knob EXP_BEFORE_MAX=1: a tile whose probabilities overflowed gets S again and the exact softmax, once no wgmma is
// in flight (inside the P·V's flight, this branch made ptxas spill and serialise the wgmma: C7512).
__device__ __forceinline__ void fa3_redo(bool redo, const Work& w, const unsigned char* smem, int j, WarpState& ws,
                                         Scores& s, int wrow, int lane, bool mask) {
#if EXP_BEFORE_MAX
  if (redo) {
    const Fa3Problem& P = *reinterpret_cast<const Fa3Problem*>(smem + OFF_PROBLEM);
    warp_rescore(s[0], P, w, wrow, (w.t_begin + j) * TILE_N, lane);
    warp_scores<false>(ws, s, nullptr, nullptr, wrow, lane, w, (w.t_begin + j) * TILE_N, mask);  // (fewer registers)
  }
#endif
}
// One key tile j of an item, after the first: Q·K_jᵀ and P_{j-1}·V_{j-1} in one turn, then softmax j.
template <bool MASK>
__device__ __forceinline__ void fa3_step(const Work& w, unsigned char* smem, const unsigned char* sQ, int qb, int g,
                                         int j, WarpState& ws, Scores& s, PTile& pa, int tid) {
  const int warp = tid >> 5, lane = tid & 31, wrow = warp * 16, wg = warp >> 2;
  const int vfull = XFORM_V ? FA3_X_FULL : FA3_V_FULL;
  const int gj = g + j;
  fa3_wait(w, FA3_K_FULL, gj);
  fa3_wait(w, vfull, gj - 1);  // both operands in before the turn: no wait between the two issues
  trace(gj, TR_READY);
  pp_turn(wg);
  trace(gj, TR_TURN);
  fa3_issue_turn(ws, s, pa, smem, sQ, gj, wrow);
  pp_pass(wg, false);
  trace(gj, TR_ISSUED);
#if WG_PIPE  // knob WG_PIPE=1: softmax of tile j while P_{j-1}·V_{j-1} runs
  wg_wait<1>();
  wg_keep(s[0]);
  trace(gj, TR_S);
  const bool redo = fa3_scores(w, sQ, qb, gj, j, ws, s, wrow, lane, MASK, false);
  fa3_softmax_done(ws, s[0]);
  trace(gj, TR_SOFTMAX);
  wg_wait<0>();
  wg_keep(ws.o[0]);
  wg_keep_sum(ws);
  trace(gj, TR_PV);
  fa3_release(w, FA3_V_EMPTY, gj - 1, lane);
  fa3_redo(redo, w, smem, j, ws, s, wrow, lane, MASK);
#else        // knob WG_PIPE=0: both products first
  wg_wait<0>();
  wg_keep(s[0]);
  wg_keep(ws.o[0]);
  wg_keep_sum(ws);
  trace(gj, TR_S);
  trace(gj, TR_PV);
  fa3_redo(fa3_scores(w, sQ, qb, gj, j, ws, s, wrow, lane, MASK, true), w, smem, j, ws, s, wrow, lane, MASK);
  trace(gj, TR_SOFTMAX);
#endif
#if LAZY_RESCALE || EXP_BEFORE_MAX  // knob LAZY_RESCALE=1: once the maxima settle, most tiles move none of the warp's 16
                                    // rows (EXP_BEFORE_MAX=1: none whose probabilities stay under P_KEEP)
  if (__any_sync(0xffffffffu, ws.alpha[0][0] != 1.f || ws.alpha[0][1] != 1.f))
#endif
  {
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int dt = 0; dt < NTD; ++dt) {
        ws.o[0][dt][2 * h] *= ws.alpha[0][h];
        ws.o[0][dt][2 * h + 1] *= ws.alpha[0][h];
      }
#if ROWSUM_MMA  // knob ROWSUM_MMA=1: the running sums are P·V's columns, rescaled with the rest of O
#pragma unroll
    for (int e = 0; e < 4; ++e) ws.lsum[0][e] *= ws.alpha[0][e >> 1];
#endif
  }
  fa3_pack_p(pa, s[0]);
  trace(gj, TR_END);
}
// An item's rows start over: no max yet, no sum (its first tile's softmax, at an item's start or ITEM_OVERLAP's hand-over).
__device__ __forceinline__ void fa3_start_rows(WarpState& ws) {
#pragma unroll
  for (int h = 0; h < 2; ++h) { ws.m[0][h] = neg_inf(); ws.l[0][h] = 0.f; }
}
// O and the running sums start over (an item's first tile, or ITEM_OVERLAP's hand-over after the epilogue).
__device__ __forceinline__ void fa3_zero_o(WarpState& ws) {
#pragma unroll
  for (int dt = 0; dt < NTD; ++dt) ws.o[0][dt][0] = ws.o[0][dt][1] = ws.o[0][dt][2] = ws.o[0][dt][3] = 0.f;
#if ROWSUM_MMA
  ws.lsum[0][0] = ws.lsum[0][1] = ws.lsum[0][2] = ws.lsum[0][3] = 0.f;
#endif
}
// An item's first tile: S_0 alone (O is still zero), softmax 0, P_0 packed.
__device__ __forceinline__ void fa3_item_start(const Work& w, unsigned char* smem, const unsigned char* sQ, int qb,
                                               int g, WarpState& ws, Scores& s, PTile& pa, int tid) {
  const int warp = tid >> 5, lane = tid & 31, wrow = warp * 16, wg = warp >> 2;
  const int n = w.n_tiles;
  fa3_start_rows(ws);
  fa3_zero_o(ws);

  fa3_wait(w, FA3_K_FULL, g);
  trace(g, TB_K);
  pp_turn(wg);
  wg_fence();
  wg_qk_issue(s[0], sQ, k_stage(smem, g % STAGES), wrow);
  wg_commit();
  pp_pass(wg, false);
  wg_wait<0>();
  wg_keep(s[0]);
  trace(g, TB_S);
  fa3_release(w, FA3_K_EMPTY, g, lane);
  if (n == 1 && lane == 0) mbar_arrive(q_empty_bar(w, qb));  // the item's last Q·Kᵀ is done
  warp_scores(ws, s, sQ, nullptr, wrow, lane, w, w.t_begin * TILE_N);
  fa3_pack_p(pa, s[0]);
  trace(g, TB_P);
}
// An item's tiles 1 .. n - 1.
__device__ __forceinline__ void fa3_item_steps(const Work& w, unsigned char* smem, const unsigned char* sQ, int qb,
                                               int g, WarpState& ws, Scores& s, PTile& pa, int tid) {
  const int n = w.n_tiles;
  // Tiles no row of this block masks (all keys < S, causal: before the first query row) take a softmax
  // with no masking branch: in one loop with the masked ones, the branch's merge point let ptxas put
  // the wait for P·V before the whole softmax (WARPGROUP.DEPBAR ahead of every MUFU.EX2 in the SASS),
  // which undid WG_PIPE's overlap. FlashAttention-3 peels its masked iterations the same way.
  const int kv_free = w.causal ? min(w.S, w.q0 + 1) : w.S;  // keys below this are never masked
  const int n_free = max(1, min(n, kv_free / TILE_N - w.t_begin));  // tiles 1 .. n_free - 1 need no mask
  for (int j = 1; j < n_free; ++j) fa3_step<false>(w, smem, sQ, qb, g, j, ws, s, pa, tid);
  for (int j = n_free; j < n; ++j) fa3_step<true>(w, smem, sQ, qb, g, j, ws, s, pa, tid);
}
#if STREAM_K
// knob STREAM_K=1: an item split between two blocks ends in each. Both halves leave their state (this thread's
// registers as they are: O unnormalised, the running max, the sums) in their boundary's slot; the second to take
// its warp's ticket merges the other's into its own, stores O and puts the ticket back to zero. Neither waits for
// the other (a wait could outlast a block that is not resident). The merge takes the halves in the item's order,
// so O does not depend on which arrived last.
constexpr int SK_SUMS = ROWSUM_MMA ? 4 : 2;
constexpr int SK_VALS = NTD * 4 + 2 + SK_SUMS;  // a consumer thread's state
__device__ __forceinline__ float sk_sum(const WarpState& ws, int e) {
#if ROWSUM_MMA
  return ws.lsum[0][e];
#else
  return ws.l[0][e];
#endif
}
__device__ __forceinline__ void sk_finish(WarpState& ws, const Work& w, const Fa3Problem& P, int tid) {
  const int warp = tid >> 5, lane = tid & 31;
  const int c = w.part > 0 ? w.part : -w.part, half = w.part > 0 ? 0 : 1;
  float* slot = P.partial + (long long)c * 2 * SK_VALS * CT + tid;  // [c][half][value][thread]
  float* mine = slot + half * SK_VALS * CT;
#pragma unroll
  for (int dt = 0; dt < NTD; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) mine[(4 * dt + e) * CT] = ws.o[0][dt][e];
#pragma unroll
  for (int h = 0; h < 2; ++h) mine[(4 * NTD + h) * CT] = ws.m[0][h];
#pragma unroll
  for (int e = 0; e < SK_SUMS; ++e) mine[(4 * NTD + 2 + e) * CT] = sk_sum(ws, e);
  __threadfence();
  __syncwarp();
  int ticket = 0;
  if (lane == 0) ticket = atomicAdd(P.tickets + c * NUM_WARPS + warp, 1);
  if (__shfl_sync(0xffffffffu, ticket, 0) == 0) return;  // the other half merges
  __syncwarp();  // lane 0's ticket, then every lane's fence: the other half's stores, fenced before its ticket, are seen
  __threadfence();
  if (lane == 0) P.tickets[c * NUM_WARPS + warp] = 0;
  const float* other = slot + (1 - half) * SK_VALS * CT;
  float sa[2], sb[2];  // the first and the second half's scale, to the larger of their maxima
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float mo = __ldcg(other + (4 * NTD + h) * CT);
    ws.m[0][h] = merge_scales(half == 0 ? ws.m[0][h] : mo, half == 0 ? mo : ws.m[0][h], sa[h], sb[h]);
  }
#pragma unroll
  for (int dt = 0; dt < NTD; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float xo = __ldcg(other + (4 * dt + e) * CT), x = ws.o[0][dt][e];
      ws.o[0][dt][e] = (half == 0 ? x : xo) * sa[e >> 1] + (half == 0 ? xo : x) * sb[e >> 1];
    }
#pragma unroll
  for (int e = 0; e < SK_SUMS; ++e) {
    const float xo = __ldcg(other + (4 * NTD + 2 + e) * CT), x = sk_sum(ws, e);
    const int h = ROWSUM_MMA ? e >> 1 : e;
    const float v = (half == 0 ? x : xo) * sa[h] + (half == 0 ? xo : x) * sb[h];
#if ROWSUM_MMA
    ws.lsum[0][e] = v;
#else
    ws.l[0][e] = v;
#endif
  }
  store_o(ws, w, warp * 16, lane);
}
#endif
// An item's end: O normalised and stored (STREAM_K=1: an item's half through sk_finish).
__device__ __forceinline__ void fa3_finish(WarpState& ws, const Work& w, const unsigned char* smem, int tid) {
#if STREAM_K
  if (w.part != 0) {
    sk_finish(ws, w, *reinterpret_cast<const Fa3Problem*>(smem + OFF_PROBLEM), tid);
    return;
  }
#endif
  store_o(ws, w, (tid >> 5) * 16, tid & 31);
}
// An item's last P·V alone, then its epilogue. `last` is this block's last item (PINGPONG's bookkeeping).
__device__ __forceinline__ void fa3_item_end(const Work& w, unsigned char* smem, int g, bool last, WarpState& ws,
                                             PTile& pa, int tid, int k_next = -1) {
  const int warp = tid >> 5, lane = tid & 31, wrow = warp * 16, wg = warp >> 2;
  const int vfull = XFORM_V ? FA3_X_FULL : FA3_V_FULL;
  const int n = w.n_tiles;
  trace(g + n, TB_END);
  fa3_wait(w, vfull, g + n - 1);
  pp_turn(wg);
  wg_keep(pa);
  wg_keep(ws.o[0]);
  wg_keep_sum(ws);
  wg_fence();
  fa3_pv_issue(ws, pa, pv_stage(smem, (g + n - 1) % STAGES));
  wg_commit();
  pp_pass(wg, last);
  trace(g + n, TB_PV_ISSUED);
  wg_wait<0>();
  wg_keep(ws.o[0]);
  wg_keep_sum(ws);
  trace(g + n, TB_PV);
  fa3_release(w, FA3_V_EMPTY, g + n - 1, lane);
  if (k_next >= 0) {  // PERSIST=1: the next item's Q (its k_next), before the stores: a fence after them waits for them
    mbar_wait(q_full_bar(w, k_next & 1), (k_next >> 1) & 1);
    async_proxy_fence();
    trace(g + n, TB_Q);
  }
  fa3_finish(ws, w, smem, tid);
  trace(g + n, TB_STORED);
}
// Consumer warpgroups: threads 0 .. NUM_WARPS*32 - 1, warp w owns rows 16w .. 16w + 15 of each item.
// One item: tiles g .. g + n - 1 of the ring.
__device__ __forceinline__ void fa3_item(const Work& w, unsigned char* smem, const unsigned char* sQ, int qb, int g,
                                         bool last, int tid, int k_next = -1) {
  WarpState ws;
  Scores s;
  PTile pa;
  fa3_item_start(w, smem, sQ, qb, g, ws, s, pa, tid);
  fa3_item_steps(w, smem, sQ, qb, g, ws, s, pa, tid);
  fa3_item_end(w, smem, g, last, ws, pa, tid, k_next);
}
#if ITEM_OVERLAP
// knob ITEM_OVERLAP=1: item w's last P·V and item wn's first Q·Kᵀ (ring position g + n) in one turn; wn's first
// softmax runs under the P·V (as a step's does, WG_PIPE=1); then w's epilogue with its own sums, and O starts over.
__device__ __forceinline__ void fa3_item_handover(const Work& w, const Work& wn, unsigned char* smem,
                                                  const unsigned char* sQn, int qbn, int g, WarpState& ws, Scores& s,
                                                  PTile& pa, int tid) {
  const int warp = tid >> 5, lane = tid & 31, wrow = warp * 16, wg = warp >> 2;
  const int vfull = XFORM_V ? FA3_X_FULL : FA3_V_FULL;
  const int gn = g + w.n_tiles;
  trace(gn, TB_END);
  fa3_wait(w, FA3_K_FULL, gn);
  fa3_wait(w, vfull, gn - 1);
  trace(gn, TB_K);
  pp_turn(wg);
  fa3_issue_turn(ws, s, pa, smem, sQn, gn, wrow);  // S_0 of item wn, item w's last P·V
  pp_pass(wg, false);
  trace(gn, TB_PV_ISSUED);
  wg_wait<1>();
  wg_keep(s[0]);
  trace(gn, TB_S);
  fa3_release(w, FA3_K_EMPTY, gn, lane);
  if (wn.n_tiles == 1 && lane == 0) mbar_arrive(q_empty_bar(wn, qbn));  // item wn's last Q·Kᵀ is done
  const float l_w[2] = {ws.l[0][0], ws.l[0][1]};  // item w's running sums (ROWSUM_MMA: in O's columns)
  const float m_w[2] = {ws.m[0][0], ws.m[0][1]};  // and max (STREAM_K=1: a half's state includes it)
  fa3_start_rows(ws);
  warp_scores(ws, s, sQn, nullptr, wrow, lane, wn, wn.t_begin * TILE_N);
  fa3_softmax_done(ws, s[0]);
  wg_wait<0>();
  wg_keep(ws.o[0]);
  wg_keep_sum(ws);
  trace(gn, TB_PV);
  fa3_release(w, FA3_V_EMPTY, gn - 1, lane);
  const float l_wn[2] = {ws.l[0][0], ws.l[0][1]}, m_wn[2] = {ws.m[0][0], ws.m[0][1]};
  ws.l[0][0] = l_w[0];
  ws.l[0][1] = l_w[1];
  ws.m[0][0] = m_w[0];
  ws.m[0][1] = m_w[1];
  fa3_finish(ws, w, smem, tid);
  trace(gn, TB_STORED);
  ws.l[0][0] = l_wn[0];
  ws.l[0][1] = l_wn[1];
  ws.m[0][0] = m_wn[0];
  ws.m[0][1] = m_wn[1];
  fa3_zero_o(ws);
  fa3_pack_p(pa, s[0]);
  trace(gn, TB_P);
}
#endif
__device__ __forceinline__ void fa3_consumer(const Fa3Problem& P, unsigned char* smem, int tid) {
#if PINGPONG  // knob PINGPONG=1: warpgroup 0 issues first
  if ((tid >> 7) == NWG - 1) named_arrive(BAR_PP + 0, 2 * 128);
#endif
  int g = 0;
#if ITEM_OVERLAP  // knob ITEM_OVERLAP=1: one item's end and the next one's start share a turn
  int idx = fa3_first_item(P);
  if (idx >= P.items) return;
  Work w = fa3_work(P, idx);
  mbar_wait(q_full_bar(w, 0), 0);  // Q landed (the producer's cp.async: generic proxy)
  async_proxy_fence();             // ... and is visible to this thread's wgmma reads
  WarpState ws;
  Scores s;
  PTile pa;
  fa3_item_start(w, smem, q_buf(smem, 0), 0, g, ws, s, pa, tid);
  for (int k = 0;; ++k) {
    const int qb = k & 1;
    fa3_item_steps(w, smem, q_buf(smem, qb), qb, g, ws, s, pa, tid);
    idx = fa3_next_item(P, idx);
    if (idx >= P.items) {
      fa3_item_end(w, smem, g, true, ws, pa, tid);
      break;
    }
    const Work wn = fa3_work(P, idx);
    const int qbn = (k + 1) & 1;
    mbar_wait(q_full_bar(wn, qbn), ((k + 1) >> 1) & 1);
    async_proxy_fence();
    trace(g + w.n_tiles, TB_Q);
    fa3_item_handover(w, wn, smem, q_buf(smem, qbn), qbn, g, ws, s, pa, tid);
    g += w.n_tiles;
    w = wn;
  }
#else
  for (int idx = fa3_first_item(P), k = 0; idx < P.items; ++k) {
    const Work w = fa3_work(P, idx);
    const int qb = k & 1;
    if (k == 0) {  // the first item's Q (the next ones: fa3_item_end)
      mbar_wait(q_full_bar(w, qb), 0);  // Q landed (the producer's cp.async: generic proxy)
      async_proxy_fence();              // ... and is visible to this thread's wgmma reads
      trace(g, TB_Q);
    }
    idx = fa3_next_item(P, idx);
    fa3_item(w, smem, q_buf(smem, qb), qb, g, idx >= P.items, tid, idx < P.items ? k + 1 : -1);
    g += w.n_tiles;
  }
#endif
}

// setmaxnreg: a block of NT threads starts with REG_CAP registers a thread (__launch_bounds__(NT, 1));
// the producer gives back REG_CAP - REG_PRODUCER a thread, and the consumers may take no more than that
// between them (an increase the freed registers cannot cover waits forever). The producer keeps what
// its loop needs without spilling (ptxas -v over the profiles): 24 (fp16), 40 with fp8's rewrite of V,
// 16 more with PERSIST's item loop; the two consumer warpgroups get 240, 232 or 224. Three consumer
// warpgroups (512 threads, REG_CAP 128) leave at most 160 a consumer thread, and only with a producer of
// 32 or less: fp8's rewrite fits 32 there (its 192-row tiles at D=64 and 128: ptxas -v); PERSIST's
// loop with a Q tile of 192 rows (12 cp.async a producer thread) needs 48 (fp16) or 56 (fp8), and 32 with the
// copies one at a time (Q_LEAN: fp16 128-key tiles, whose consumers need 160). STREAM_K's share takes 8 more
// from the fp16 producer of two consumer warpgroups (ptxas -v: 12 bytes spilled with 40).
constexpr int REG_CAP = (65536 / NT) & ~7;
constexpr int REG_PRODUCER = NWG == 3 ? (PERSIST ? (XFORM_V ? 56 : Q_LEAN ? 32 : 48) : (XFORM_V ? 32 : 24))
                                       : (XFORM_V ? 40 : 24) + (PERSIST ? 16 : 0) + (STREAM_K && !XFORM_V ? 8 : 0);
constexpr int REG_CONSUMER = (REG_CAP + (REG_CAP - REG_PRODUCER) * 128 / CT) & ~7;
static_assert(NUM_WARPS < 8 || 128 * REG_PRODUCER + CT * REG_CONSUMER <= 128 * REG_CAP + CT * REG_CAP,
              "MMA_PATH=3: the consumers take more registers than the producer frees");
__device__ __forceinline__ void block_fa3(const Fa3Problem& P, unsigned char* smem) {
  const int warp = threadIdx.x >> 5;
  // One if / else, one role per warpgroup: what setmaxnreg needs to take effect.
  if (warp >= NUM_WARPS) {
#if NUM_WARPS >= 8  // (one consumer warpgroup has its 255 registers already)
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REG_PRODUCER));
#endif
    fa3_producer(P, smem, threadIdx.x - CT);
  } else {
#if NUM_WARPS >= 8
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REG_CONSUMER));
#endif
    fa3_consumer(P, smem, threadIdx.x);
  }
}

__device__ __forceinline__ void fa3_kernel(unsigned char* smem, const IN_T* Q, const IN_T* K, const IN_T* V, __half* O,
                                           float* partial_o, int* split_counter,
                                           float q_descale, float k_descale, float v_descale, float softmax_scale,
                                           int B, int H, int S, int causal, unsigned long long kmap,
                                           unsigned long long vmap) {
  const int n_q = (S + TILE_M - 1) / TILE_M;
  // A wrong launch is an error, never a wrong answer. PERSIST=1: any grid of at most one block per item.
  unsigned dyn_smem;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn_smem));
  if (dyn_smem < SMEM_BYTES || blockDim.x != NT || gridDim.z != 1 ||
      (PERSIST ? gridDim.y != 1 || (int)gridDim.x > n_q * B * H : gridDim.y != B * H || (int)gridDim.x != n_q))
    __trap();
  unsigned char* base = smem + ((1024u - (smem_u32(smem) & 1023u)) & 1023u);  // the swizzle atoms' alignment
  static_assert(OFF_PROBLEM + sizeof(Fa3Problem) <= MAIN_BYTES, "MMA_PATH=3: the problem must fit after the mbarriers");
  Fa3Problem& P = *reinterpret_cast<Fa3Problem*>(base + OFF_PROBLEM);
  if (threadIdx.x == 0) {
    P.n_q = n_q;
    P.items = n_q * B * H;
    P.Q = reinterpret_cast<const unsigned char*>(Q);
    P.K = reinterpret_cast<const unsigned char*>(K);
    P.V = reinterpret_cast<const unsigned char*>(V);
    P.O = O;
    P.S = S;
    P.causal = causal;
    P.scale_log2 = softmax_scale * q_descale * k_descale * LOG2E;
    P.v_descale = v_descale;
    P.kmap = kmap;
    P.vmap = vmap;
    P.bars = smem_u32(base + OFF_BAR);
#if STREAM_K
    P.partial = partial_o;
    P.tickets = split_counter;
    sk_share(P);
#endif
    Work w;
    w.tma_bar = P.bars;
#pragma unroll
    for (int st = 0; st < STAGES; ++st) {
      mbar_init_n(fa3_bar(w, FA3_K_FULL, st), 1);           // the producer's expect_tx
      mbar_init_n(fa3_bar(w, FA3_V_FULL, st), 1);
      mbar_init_n(fa3_bar(w, FA3_K_EMPTY, st), NUM_WARPS);  // one per consumer warp
      mbar_init_n(fa3_bar(w, FA3_V_EMPTY, st), NUM_WARPS);
      mbar_init_n(fa3_bar(w, FA3_X_FULL, st), 1);           // the producer's thread 0
    }
#pragma unroll
    for (int b = 0; b < 2; ++b) {
      mbar_init_n(q_full_bar(w, b), 128);                   // every producer thread's copies
      mbar_init_n(q_empty_bar(w, b), NUM_WARPS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(kmap) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(vmap) : "memory");
  }
  __syncthreads();
  block_fa3(P, base);
}
#endif  // MMA_PATH == 3

#if MMA_PATH != 3
__device__ __forceinline__ void block_mma(const Work& w, unsigned char* smem) {
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const unsigned char* sQ = smem + OFF_Q;

#if WARP_SPEC  // knob WARP_SPEC=1: the last warp is the producer
  if (warp == CW) {
    producer(w, smem, lane);
#if SPLIT_KV > 1   // knob SPLIT_KV>1: the producer warp has no rows, but waits out the cluster barrier it arrived at
    split_wait_peers();
#endif
    return;
  }
#endif
  const int wrow = warp * WM;
  WarpState ws;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) { ws.m[mt][h] = neg_inf(); ws.l[mt][h] = 0.f; }
#pragma unroll
    for (int dt = 0; dt < NTD; ++dt) ws.o[mt][dt][0] = ws.o[mt][dt][1] = ws.o[mt][dt][2] = ws.o[mt][dt][3] = 0.f;
  }

#if WARP_SPEC
  // consumers: wait FULL, compute, release EMPTY
  for (int j = 0; j < w.n_tiles; ++j) {
    const int st = j % STAGES;
    const int kv0 = (w.t_begin + j) * TILE_N;
    named_sync(BAR_FULL + st, NT);
    if (j == 0) load_q_frags(ws, sQ, wrow, lane);
    const unsigned char* sV = v_stage(smem, st);
    if (warp_active(w, wrow, kv0)) {
      Scores s;
      warp_scores(ws, s, sQ, k_stage(smem, st), wrow, lane, w, kv0);
      warp_pv(ws, s, sV, lane);
    }
    if (j + STAGES < w.n_tiles) named_arrive(BAR_EMPTY + st, NT);
  }
#else
  // all warps copy and compute. Prologue: Q, then tiles 0 .. PD-1.
  issue_q<NT>(w, smem, tid);
#pragma unroll
  for (int p = 0; p < PD; ++p) {
    if (p < w.n_tiles) issue_kv<NT>(w, smem, w.t_begin + p, p, tid);
    else issue_none();
  }
#if V_REGS  // fp8: this thread's chunks of the next V tile (STAGES>1: V_0 now, then one tile ahead)
  uint4 vr[VR_CHUNKS];
  if (STAGES > 1 && w.n_tiles > 0) load_v_regs(vr, w, w.t_begin * TILE_N, tid);
#endif
#if WG_PIPE  // knob WG_PIPE=1: P of the previous tile, its P·V not issued yet
  unsigned pa[TILE_N / 16][4];
#pragma unroll
  for (int kk = 0; kk < TILE_N / 16; ++kk) pa[kk][0] = pa[kk][1] = pa[kk][2] = pa[kk][3] = 0u;
  bool pend = false;
#endif
  for (int j = 0; j < w.n_tiles; ++j) {
    const int st = j % STAGES;
    const int kv0 = (w.t_begin + j) * TILE_N;
#if STAGES == 1   // knob STAGES=1: copy tile j now, overlap V's copy with Q·Kᵀ
    __syncthreads();                           // everyone is done with the previous tile
    issue_kv<NT>(w, smem, w.t_begin + j, 0, tid);
#if V_REGS        // (fp8: V_j into registers, in flight under K_j's copy and Q·K_jᵀ)
    load_v_regs(vr, w, kv0, tid);
#endif
    cp_async_wait<1>();                        // K_j (and Q) landed; V_j may still be in flight
    tma_wait(w, j, 0);                         // (USE_TMA=1: K_j by its mbarrier, which every thread waits on)
    if (!USE_TMA || j == 0) {                  // (USE_TMA=1: only Q's cp.async copies need publishing)
      async_proxy_fence();
      __syncthreads();
    }
#else             // knob STAGES>1: tile j was issued PD iterations ago
    cp_async_wait<2 * PD - 2>();               // K_j and V_j landed (own copies; USE_TMA=1: Q only)
    tma_wait(w, j, 0);                         // (USE_TMA=1: K_j and V_j by their mbarriers;
    if (!V_REGS) tma_wait(w, j, 1);            //  V_REGS=1: V_j comes through registers)
    if (!USE_TMA || j == 0) async_proxy_fence();
    __syncthreads();                           // ... everyone's; and tile j-1's stage is free
    if (j + PD < w.n_tiles) issue_kv<NT>(w, smem, w.t_begin + j + PD, (j + PD) % STAGES, tid);
    else issue_none();
#endif
    if (j == 0) load_q_frags(ws, sQ, wrow, lane);
    const unsigned char* sV = WIDE_V ? vh_buf(smem, 0) : v_stage(smem, st);
    const bool active = warp_active(w, wrow, kv0);
    Scores s;
#if WG_PIPE       // knob WG_PIPE=1: P_{j-1}·V_{j-1} runs under tile j's softmax (STAGES=3, PD=1: V_{j-1}'s
                  // stage is refilled only after the next barrier)
    const unsigned char* sV_prev = v_stage(smem, (j + STAGES - 1) % STAGES);
    if (active) {
      wg_pipe_issue(ws, s, pa, sQ, k_stage(smem, st), j > 0 ? sV_prev : sV, wrow);
      warp_scores(ws, s, sQ, k_stage(smem, st), wrow, lane, w, kv0);  // s: P_j, ws.alpha: its rescale
      wg_pipe_rescale(ws);
      wg_pack_p(pa, s[0]);
      pend = true;
    } else if (pend) {  // causal: no more keys for this warpgroup; finish before V_{j-1}'s stage is reused
      wg_pipe_flush(ws, pa, sV_prev);
      pend = false;
    }
#else
#if MMA_PATH == 2 && QK_HOISTED  // Q·K_jᵀ issued by every warpgroup, active or not (QK_HOISTED)
    wg_fence();
    wg_qk_issue(s[0], sQ, k_stage(smem, st), wrow);
    wg_commit();
#if V_REGS                // knob IN_FP8=1: V_j from registers into its fp16 copy, under Q·K_jᵀ
    store_v_wide(smem, vr, tid);
    if (STAGES > 1 && j + 1 < w.n_tiles) load_v_regs(vr, w, kv0 + TILE_N, tid);  // V_{j+1}, in flight until then
    async_proxy_fence();
    __syncthreads();
#elif IN_FP8 && STAGES > 1  // knob IN_FP8=1: widen V_j while Q·K_jᵀ is on the tensor cores
    widen_v(smem, st, tid);  // every thread converts, fences, meets the barrier
#endif
    wg_wait_all();
    wg_keep(s[0]);
#endif
    if (active) warp_scores(ws, s, sQ, k_stage(smem, st), wrow, lane, w, kv0);
#if STAGES == 1 && !V_REGS  // knob STAGES=1: V_j must be visible to every warp before P·V
#if USE_TMA       // knob USE_TMA=1: each thread waits on V_j's mbarrier; nothing of its own to publish
    tma_wait(w, j, 1);
#else
    cp_async_wait<0>();
    async_proxy_fence();
    __syncthreads();
#endif
    widen_v(smem, 0, tid);
#endif
    if (active) warp_pv(ws, s, sV, lane);
#endif
  }
#if WG_PIPE
  if (pend) wg_pipe_flush(ws, pa, v_stage(smem, (w.n_tiles - 1) % STAGES));
#endif
#endif

#if SPLIT_KV > 1  // knob SPLIT_KV>1: merge the splits' partial states of the row tiles this block owns
  cp_async_wait<0>();  // a split with no tiles may still have its Q copy in flight
  split_exchange(ws, smem, wrow, lane);
#endif
  store_o(ws, w, wrow, lane);
}
#endif  // MMA_PATH != 3

#else  // MMA_PATH == 0
// =============================================================================================
// MMA_PATH=0: the seed kernels' shape. Scores sS, probabilities sP, output sO, m and l in smem.
// =============================================================================================
__device__ __forceinline__ void qk_product(const unsigned char* smem, const unsigned char* sK, float* sS, int ctid) {
  const __half* sQ = reinterpret_cast<const __half*>(smem + OFF_Q);
#if USE_WMMA_QK  // knob USE_WMMA_QK=1: 16x16x16 WMMA tiles, warps take tiles round-robin
  using namespace nvcuda;
  const __half* Kh = reinterpret_cast<const __half*>(sK);
  const int cwarp = ctid >> 5;
  for (int t = cwarp; t < (TILE_M / 16) * (TILE_N / 16); t += CW) {
    const int mi = t / (TILE_N / 16), ni = t % (TILE_N / 16);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.f);
#pragma unroll
    for (int k = 0; k < HEAD_DIM / 16; ++k) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;  // Kᵀ: column n is K row n
      wmma::load_matrix_sync(a, sQ + mi * 16 * (RS_H / 2) + k * 16, RS_H / 2);
      wmma::load_matrix_sync(b, Kh + ni * 16 * (RS_H / 2) + k * 16, RS_H / 2);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(sS + mi * 16 * LDS + ni * 16, acc, LDS, wmma::mem_row_major);
  }
#else            // knob USE_WMMA_QK=0: scalar FMA, one score per thread per step
  for (int i = ctid; i < TILE_M * TILE_N; i += CT) {
    const int r = i / TILE_N, n = i % TILE_N;
    const __half* q = sQ + r * (RS_H / 2);
    const unsigned char* k = sK + n * RS_IN;
    float acc = 0.f;
#pragma unroll 4
    for (int d0 = 0; d0 < HEAD_DIM; d0 += 8) {
      const uint4 qv = *reinterpret_cast<const uint4*>(q + d0);
#if IN_FP8
      const uint2 kr = *reinterpret_cast<const uint2*>(k + d0);
      const uint4 kv = make_uint4(fp8x2_to_h2(kr.x), fp8x2_to_h2(kr.x >> 16), fp8x2_to_h2(kr.y), fp8x2_to_h2(kr.y >> 16));
#else
      const uint4 kv = *reinterpret_cast<const uint4*>(k + d0 * 2);
#endif
      const unsigned qa[4] = {qv.x, qv.y, qv.z, qv.w}, ka[4] = {kv.x, kv.y, kv.z, kv.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float2 qf = __half22float2(*reinterpret_cast<const __half2*>(&qa[e]));
        const float2 kf = __half22float2(*reinterpret_cast<const __half2*>(&ka[e]));
        acc = fmaf(qf.x, kf.x, acc);
        acc = fmaf(qf.y, kf.y, acc);
      }
    }
    sS[r * LDS + n] = acc;
  }
#endif
}

// Online softmax over one tile of scores, one warp per row.
__device__ __forceinline__ void softmax_rows(const Work& w, unsigned char* smem, int kv0, int ctid) {
  float* sS = reinterpret_cast<float*>(smem + OFF_S);
  __half* sP = reinterpret_cast<__half*>(smem + OFF_P);
  float* sO = reinterpret_cast<float*>(smem + OFF_O);
  float* sM = reinterpret_cast<float*>(smem + OFF_M);
  float* sL = reinterpret_cast<float*>(smem + OFF_L);
  const int cwarp = ctid >> 5, lane = ctid & 31;
  for (int r = cwarp; r < TILE_M; r += CW) {
    const int row = w.q0 + r;
    float mx = neg_inf();
    for (int n = lane; n < TILE_N; n += 32) {
      const int col = kv0 + n;
      float v = sS[r * LDS + n] * w.scale_log2;
      if (col >= w.S || (w.causal && col > row)) v = neg_inf();
      sS[r * LDS + n] = v;
      mx = fmaxf(mx, v);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    const float m_old = sM[r];
    const float m_new = fmaxf(m_old, mx);                 // online softmax: running max
    const float m_use = m_new == neg_inf() ? 0.f : m_new; // row masked so far: no inf - inf
    const float alpha = fast_exp2(m_old - m_use);         // rescale earlier tiles
    float sum = 0.f;
    for (int n = lane; n < TILE_N; n += 32) {
      const float p = fast_exp2(sS[r * LDS + n] - m_use); // this tile's probabilities
      sum += p;
#if USE_WMMA_PV  // knob USE_WMMA_PV=1: P as fp16 for the tensor cores
      sP[r * LDP + n] = __float2half_rn(p);
#else            // knob USE_WMMA_PV=0: P stays fp32 in place
      sS[r * LDS + n] = p;
#endif
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    for (int d = lane; d < HEAD_DIM; d += 32) sO[r * LDO + d] *= alpha;
    if (lane == 0) {
      sM[r] = m_new;
      sL[r] = sL[r] * alpha + sum;                         // running sum
    }
  }
}

__device__ __forceinline__ void pv_product(unsigned char* smem, const unsigned char* sV, int ctid) {
  float* sO = reinterpret_cast<float*>(smem + OFF_O);
#if USE_WMMA_PV  // knob USE_WMMA_PV=1: 16x16x16 WMMA tiles accumulate into sO
  using namespace nvcuda;
  const __half* sP = reinterpret_cast<const __half*>(smem + OFF_P);
  const __half* Vh = reinterpret_cast<const __half*>(sV);
  const int cwarp = ctid >> 5;
  for (int t = cwarp; t < (TILE_M / 16) * (HEAD_DIM / 16); t += CW) {
    const int mi = t / (HEAD_DIM / 16), di = t % (HEAD_DIM / 16);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, sO + mi * 16 * LDO + di * 16, LDO, wmma::mem_row_major);
#pragma unroll
    for (int k = 0; k < TILE_N / 16; ++k) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
      wmma::load_matrix_sync(a, sP + mi * 16 * LDP + k * 16, LDP);
      wmma::load_matrix_sync(b, Vh + k * 16 * (RS_H / 2) + di * 16, RS_H / 2);
      wmma::mma_sync(acc, a, b, acc);
    }
    wmma::store_matrix_sync(sO + mi * 16 * LDO + di * 16, acc, LDO, wmma::mem_row_major);
  }
#else            // knob USE_WMMA_PV=0: scalar FMA, one output element per thread per step
  const float* sS = reinterpret_cast<const float*>(smem + OFF_S);
  for (int i = ctid; i < TILE_M * HEAD_DIM; i += CT) {
    const int r = i / HEAD_DIM, d = i % HEAD_DIM;
    float acc = sO[r * LDO + d];
#pragma unroll 4
    for (int n = 0; n < TILE_N; ++n) {
#if IN_FP8
      const float v = __half2float(__ushort_as_half(static_cast<unsigned short>(fp8x2_to_h2(sV[n * RS_IN + d]))));
#else
      const float v = __half2float(*reinterpret_cast<const __half*>(sV + n * RS_IN + d * 2));
#endif
      acc = fmaf(sS[r * LDS + n], v, acc);
    }
    sO[r * LDO + d] = acc;
  }
#endif
}

// One K/V tile for the compute warps: S = Q·Kᵀ; online softmax; O += P·V.
__device__ __forceinline__ void block_tile(const Work& w, unsigned char* smem, int st, int conv, int kv0, int ctid) {
  const unsigned char* sK = NEED_KH ? kh_buf(smem, conv) : k_stage(smem, st);
  const unsigned char* sV = NEED_VH ? vh_buf(smem, conv) : v_stage(smem, st);
  qk_product(smem, sK, reinterpret_cast<float*>(smem + OFF_S), ctid);
  compute_sync();
  softmax_rows(w, smem, kv0, ctid);
  compute_sync();
  pv_product(smem, sV, ctid);
}

__device__ __forceinline__ void block_smem(const Work& w, unsigned char* smem) {
  const int tid = threadIdx.x;
  float* sO = reinterpret_cast<float*>(smem + OFF_O);
  float* sM = reinterpret_cast<float*>(smem + OFF_M);
  float* sL = reinterpret_cast<float*>(smem + OFF_L);

#if WARP_SPEC  // knob WARP_SPEC=1: the last warp is the producer
  if (tid >= CT) {
    producer(w, smem, tid & 31);
    return;
  }
#endif
  for (int i = tid; i < TILE_M * LDO; i += CT) sO[i] = 0.f;
  for (int r = tid; r < TILE_M; r += CT) { sM[r] = neg_inf(); sL[r] = 0.f; }

#if WARP_SPEC
  for (int j = 0; j < w.n_tiles; ++j) {
    const int st = j % STAGES;
    named_sync(BAR_FULL + st, NT);  // also orders the sO / sM / sL initialisation above
    block_tile(w, smem, st, st, (w.t_begin + j) * TILE_N, tid);
    compute_sync();                 // sS / sP / sO are reused by the next tile
    if (j + STAGES < w.n_tiles) named_arrive(BAR_EMPTY + st, NT);
  }
#else
  issue_q<NT>(w, smem, tid);
#pragma unroll
  for (int p = 0; p < PD; ++p) {
    if (p < w.n_tiles) issue_kv<NT>(w, smem, w.t_begin + p, p, tid);
    else issue_none();
  }
  for (int j = 0; j < w.n_tiles; ++j) {
    const int st = j % STAGES;
#if STAGES == 1   // knob STAGES=1: copy tile j now
    __syncthreads();
    issue_kv<NT>(w, smem, w.t_begin + j, 0, tid);
    cp_async_wait<0>();
#else             // knob STAGES>1: tile j was issued PD iterations ago
    cp_async_wait<2 * PD - 2>();
#endif
    __syncthreads();  // tile j visible; the previous tile's stage and sS / sP / sO are free
#if STAGES > 1
    if (j + PD < w.n_tiles) issue_kv<NT>(w, smem, w.t_begin + j + PD, (j + PD) % STAGES, tid);
    else issue_none();
#endif
    if (NEED_KH || NEED_VH) {
      convert_kv(smem, st, 0, tid, NT);
      __syncthreads();
    }
    block_tile(w, smem, st, 0, (w.t_begin + j) * TILE_N, tid);
  }
#endif
  compute_sync();  // P·V of the last tile (or the initialisation) is complete

#if SPLIT_KV == 1  // knob SPLIT_KV=1: normalise and store
  const int rows = min(TILE_M, w.S - w.q0);
  for (int i = tid; i < rows * HEAD_DIM; i += CT) {
    const int r = i / HEAD_DIM, d = i % HEAD_DIM;
    const float l = sL[r];
    const float inv = l > 0.f ? w.v_descale / l : 0.f;
    w.O[(long long)(w.q0 + r) * HEAD_DIM + d] = __float2half_rn(sO[r * LDO + d] * inv);
  }
#endif             // (SPLIT_KV>1 needs MMA_PATH >= 1: static_assert above)
}
#endif  // MMA_PATH

}  // namespace sdpa

// =============================================================================================
// Entry point. grid = (ceil(S/TILE_M), B*H, SPLIT_KV), block = (NUM_WARPS+WARP_SPEC)*32, smem = SMEM_BYTES.
// =============================================================================================
#if SPLIT_KV > 1  // knob SPLIT_KV>1: one cluster per query tile, its splits along z
#define SDPA_CLUSTER __cluster_dims__(1, 1, SPLIT_KV)
#else
#define SDPA_CLUSTER
#endif
extern "C" __global__ void __launch_bounds__(sdpa::NT, MIN_BLOCKS) SDPA_CLUSTER
sdpa_fwd(const IN_T* __restrict__ Q, const IN_T* __restrict__ K, const IN_T* __restrict__ V,
         __half* __restrict__ O, float* __restrict__ partial_o, float* __restrict__ partial_ml,
         int* __restrict__ split_counter, float q_descale, float k_descale, float v_descale,
         float softmax_scale, int B, int H, int S, int causal, const __grid_constant__ sdpa::TmaMap k_map,
         const __grid_constant__ sdpa::TmaMap v_map) {
  using namespace sdpa;
  extern __shared__ __align__(128) unsigned char smem[];
#if MMA_PATH == 3  // knob MMA_PATH=3: FlashAttention-3's blocks: their own launch check and work items
  fa3_kernel(smem, Q, K, V, O, partial_o, split_counter, q_descale, k_descale, v_descale, softmax_scale, B, H, S, causal,
             reinterpret_cast<unsigned long long>(&k_map), reinterpret_cast<unsigned long long>(&v_map));
#else
  // A wrong launch is an error, never a wrong answer.
  unsigned dyn_smem;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn_smem));
  if (dyn_smem < SMEM_BYTES || blockDim.x != NT || gridDim.z != SPLIT_KV || gridDim.y != B * H ||
      gridDim.x != (S + TILE_M - 1) / TILE_M)
    __trap();

  Work w;
  w.S = S;
  w.causal = causal;
  w.bh = blockIdx.y;
  w.q0 = blockIdx.x * TILE_M;
  const long long head = (long long)w.bh * S * HEAD_DIM;  // elements before this (b, h)
  w.gQ = reinterpret_cast<const unsigned char*>(Q) + (head + (long long)w.q0 * HEAD_DIM) * ESZ;
  w.gK = reinterpret_cast<const unsigned char*>(K) + head * ESZ;
  w.gV = reinterpret_cast<const unsigned char*>(V) + head * ESZ;
  w.O = O + head;
  w.scale_log2 = softmax_scale * q_descale * k_descale * LOG2E;
  w.v_descale = v_descale;
  // keys this block's rows can see, in TILE_N tiles, split evenly across the SPLIT_KV blocks
  const int kv_len = causal ? min(S, w.q0 + TILE_M) : S;
  const int tiles = (kv_len + TILE_N - 1) / TILE_N;
  const int per_split = (tiles + SPLIT_KV - 1) / SPLIT_KV;
  w.t_begin = min(tiles, (int)blockIdx.z * per_split);
  w.n_tiles = min(tiles, w.t_begin + per_split) - w.t_begin;

#if MMA_PATH >= 2  // knob MMA_PATH=2 or 3: wgmma; tiles need a 1024-byte aligned base (SMEM_BYTES has the slack)
  unsigned char* base = smem + ((1024u - (smem_u32(smem) & 1023u)) & 1023u);
#else
  unsigned char* base = smem;
#endif
#if USE_TMA  // knob USE_TMA=1: the ring's mbarriers, in the alignment slack (SMEM_BYTES unchanged): before
             // base when the round-up left 64 bytes there, else after the mailbox (then >= 960 are left)
  w.kmap = reinterpret_cast<unsigned long long>(&k_map);
  w.vmap = reinterpret_cast<unsigned long long>(&v_map);
  w.tma_bar = smem_u32(base - smem >= 64 ? base - 64 : base + MAIN_BYTES + MAIL_BYTES);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int i = 0; i < 2 * STAGES; ++i) mbar_init(w.tma_bar + 8 * i);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(w.kmap) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(w.vmap) : "memory");
  }
  __syncthreads();
#endif
#if SPLIT_KV > 1  // knob SPLIT_KV>1: the mailbox is ready before any split can finish
  split_start(base);
#endif
#if MMA_PATH >= 1  // knob MMA_PATH=1 (register-resident mma.sync) or 2 (wgmma)
  block_mma(w, base);
#else              // knob MMA_PATH=0: WMMA / scalar through shared memory
  block_smem(w, smem);
#endif
#endif  // MMA_PATH == 3
}
