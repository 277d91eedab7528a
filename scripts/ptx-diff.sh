#!/usr/bin/env bash
# Does a change to templates/sdpa.cu leave the kernels it did not mean to touch alone? Compiles a
# spread of configurations (every MMA_PATH, fp16 and fp8, D=64 and 128, and the MMA_PATH=3 knobs) to
# PTX from the working tree and from REV's template, and compares them byte for byte. A configuration
# whose PTX is unchanged keeps every GPU measurement made of it (the GREEN sweeps, timings and exports
# in docs/results/), so a change that claims "PTX of every earlier configuration unchanged" runs this.
# No GPU needed (nvcc -ptx only). Exit 0: all the same; 1: some differ (listed); 2: a build failed.
# A configuration that sets a knob REV's template does not have builds there with the knob ignored,
# and so shows as different.
#   scripts/ptx-diff.sh [REV]          # default HEAD
set -uo pipefail
cd "$(dirname "$0")/.."
rev="${1:-HEAD}"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git show "$rev:templates/sdpa.cu" > "$work/old.cu" || { echo "ptx-diff: no templates/sdpa.cu at $rev" >&2; exit 2; }
# name, then the -D defines; knobs left out take the template's defaults
configs=$(cat <<'CFG'
p0_seed -DMMA_PATH=0 -DIN_FP8=1 -DHEAD_DIM=64 -DTILE_M=32 -DTILE_N=32 -DNUM_WARPS=4 -DSTAGES=1 -DSWIZZLE=1 -DUSE_CP_ASYNC=0
p1_fp8 -DMMA_PATH=1 -DIN_FP8=1 -DHEAD_DIM=64 -DTILE_M=64 -DTILE_N=64 -DNUM_WARPS=4 -DSTAGES=2 -DSWIZZLE=2
p1_fp8pv -DMMA_PATH=1 -DIN_FP8=1 -DHEAD_DIM=64 -DTILE_M=64 -DTILE_N=64 -DNUM_WARPS=4 -DSTAGES=2 -DPV_FP8=1
p1_fp16_ws -DMMA_PATH=1 -DHEAD_DIM=64 -DTILE_M=64 -DTILE_N=64 -DNUM_WARPS=4 -DSTAGES=2 -DWARP_SPEC=1
p2_fp16_64 -DMMA_PATH=2 -DHEAD_DIM=64 -DTILE_M=64 -DTILE_N=128 -DNUM_WARPS=4 -DSTAGES=2 -DSPLIT_KV=2
p2_fp16_128tma -DMMA_PATH=2 -DHEAD_DIM=128 -DTILE_M=128 -DTILE_N=64 -DNUM_WARPS=8 -DSTAGES=2 -DUSE_TMA=1
p2_fp16_pipe -DMMA_PATH=2 -DHEAD_DIM=128 -DTILE_M=64 -DTILE_N=64 -DNUM_WARPS=4 -DSTAGES=3 -DWG_PIPE=1 -DUSE_TMA=1
p2_fp8_vregs -DMMA_PATH=2 -DIN_FP8=1 -DHEAD_DIM=64 -DTILE_M=64 -DTILE_N=128 -DNUM_WARPS=4 -DSTAGES=2 -DSPLIT_KV=2 -DV_REGS=1
p2_fp8_128 -DMMA_PATH=2 -DIN_FP8=1 -DHEAD_DIM=128 -DTILE_M=64 -DTILE_N=128 -DNUM_WARPS=4 -DSTAGES=2 -DUSE_TMA=1 -DV_REGS=1
p3_fp16 -DMMA_PATH=3 -DHEAD_DIM=128 -DTILE_M=128 -DTILE_N=128 -DNUM_WARPS=8 -DSTAGES=2 -DUSE_TMA=1 -DPINGPONG=1 -DWG_PIPE=1
p3_fp8 -DMMA_PATH=3 -DIN_FP8=1 -DHEAD_DIM=128 -DTILE_M=128 -DTILE_N=64 -DNUM_WARPS=8 -DSTAGES=3 -DUSE_TMA=1 -DPERSIST=1 -DPINGPONG=1
p3_fp8pv -DMMA_PATH=3 -DIN_FP8=1 -DPV_FP8=1 -DHEAD_DIM=128 -DTILE_M=128 -DTILE_N=128 -DNUM_WARPS=8 -DSTAGES=2 -DUSE_TMA=1 -DPERSIST=1
p3_fp8pv_wide -DMMA_PATH=3 -DIN_FP8=1 -DPV_FP8=1 -DHEAD_DIM=128 -DTILE_M=128 -DTILE_N=192 -DNUM_WARPS=8 -DSTAGES=2 -DUSE_TMA=1 -DWG_PIPE=1 -DPERSIST=1
p3_fp8pv64 -DMMA_PATH=3 -DIN_FP8=1 -DPV_FP8=1 -DHEAD_DIM=64 -DTILE_M=64 -DTILE_N=64 -DNUM_WARPS=4 -DSTAGES=3 -DUSE_TMA=1 -DWG_PIPE=1
p3_w12_fp16 -DMMA_PATH=3 -DHEAD_DIM=64 -DTILE_M=192 -DNUM_WARPS=12 -DTILE_N=128 -DSTAGES=2 -DUSE_TMA=1 -DWG_PIPE=1 -DPINGPONG=1
p3_w12_fp8 -DMMA_PATH=3 -DIN_FP8=1 -DHEAD_DIM=64 -DTILE_M=192 -DNUM_WARPS=12 -DTILE_N=64 -DSTAGES=2 -DUSE_TMA=1 -DPERSIST=1
p3_lazy -DMMA_PATH=3 -DIN_FP8=1 -DPV_FP8=1 -DHEAD_DIM=64 -DTILE_M=128 -DNUM_WARPS=8 -DTILE_N=224 -DSTAGES=3 -DUSE_TMA=1 -DWG_PIPE=1 -DPERSIST=1 -DLAZY_RESCALE=1
CFG
)
ptx() {  # ptx SOURCE NAME DEFINES...: PTX into $work/NAME.<old|new>.ptx
  local src=$1 out=$2; shift 2
  "$nvcc" -std=c++17 -gencode arch=compute_90a,code=compute_90a -ptx "$@" "$src" -o "$out" 2>"$out.log"
}
same=0 differ=() broken=()
while read -r name defs; do
  [ -z "$name" ] && continue
  # shellcheck disable=SC2086  # the defines are words
  ptx templates/sdpa.cu "$work/$name.new.ptx" $defs || { broken+=("$name (working tree: $(head -n 3 "$work/$name.new.ptx.log" | tr '\n' ' '))"); continue; }
  # shellcheck disable=SC2086
  if ! ptx "$work/old.cu" "$work/$name.old.ptx" $defs; then
    echo "new   $name (no build at $rev: a configuration the change adds)"
    continue
  fi
  if cmp -s "$work/$name.old.ptx" "$work/$name.new.ptx"; then
    same=$((same + 1))
  else
    differ+=("$name")
    echo "DIFF  $name: $(diff "$work/$name.old.ptx" "$work/$name.new.ptx" | grep -c '^[<>]') lines"
  fi
done <<< "$configs"
echo "ptx-diff against $rev: ${same} the same, ${#differ[@]} different, ${#broken[@]} not built"
for b in "${broken[@]}"; do echo "not built: $b" >&2; done
[ ${#broken[@]} -eq 0 ] || exit 2
[ ${#differ[@]} -eq 0 ] || exit 1
