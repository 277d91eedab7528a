#!/usr/bin/env bash
# Call F (eighteenth session, 4 x H200): GREEN's per-trial host work, before and after, alternated in
# one call. A diagnostic build (callE_diag.sh, 1 x H200) timed GREEN's steps finer: of sdpa_fp8's
# 12.0 ms a candidate (37 trials), packing the arguments took 1.09 ms (two tensor maps encoded every
# trial, 29 us) and building the reference memo's key 0.66 + 0.63 ms (18 us a trial, twice). Now
# each tensor map is encoded once a configuration and each problem's key prefix once a candidate.
# Old: the bundle of 1058591 (bundle_old/); new: this tree (bundle/). No pool (each run its own
# workers, so each build runs as itself); the reference store emptied before each run.
# Predicted: sdpa_fp8's GREEN median a candidate -1.6 to -2.0 ms (12 -> 10 ms), its evaluations a
# second +6-9 % on one GPU and on two; gemm_fp16 (no tensor map, 12 trials) +0-2 %; verdicts identical.
# Then every GPU test on the new bundle. carry ["bundle.tar.xz", "bundle_old.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
for b in bundle bundle_old; do [ -x $b/evo ] && [ $b/evo -nt $b.tar.xz ] || { rm -rf $b; tar xJf $b.tar.xz; }; done
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/f.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL=0
for prof in sdpa_fp8 gemm_fp16; do
  for b in bundle_old bundle; do EVO_CACHE=/tmp/f-$prof LD_LIBRARY_PATH=$PWD/$b/lib $b/evo compile $prof --all > /dev/null 2>&1; done
done
run() {  # build profile devices tag
  local b=$1 prof=$2 d=$3 n=$4
  rm -f /tmp/$n.db*; rm -rf /tmp/f-$prof/reference
  local t=$(date +%s%N)
  EVO_BINARY=$PWD/$b/evo LD_LIBRARY_PATH=$PWD/$b/lib EVO_CACHE=/tmp/f-$prof EVO_GREEN_TIMES=$S/$n.green.jsonl \
    timeout 120 $b/evo --db /tmp/$n.db run --profile $prof --strategy exhaustive --budget 1000 --devices $d --no-sanitize -q > $S/$n.txt 2>&1
  local rc=$? ms=$(( ($(date +%s%N) - t) / 1000000 ))
  LD_LIBRARY_PATH=$PWD/$b/lib $b/evo --db /tmp/$n.db export-landscape 1 --to $S/$n.landscape.json > /dev/null 2>&1
  log "$n: rc=$rc wall=$ms ms $(grep -E '^time' $S/$n.txt | cut -c1-110)"
}
for turn in 1 2 3; do
  for d in 0 0,1; do for b in bundle_old bundle; do run $b sdpa_fp8 $d ${b}_sdpa_${d/,/_}_$turn; done; done
  for b in bundle_old bundle; do run $b gemm_fp16 0 ${b}_gemm_0_$turn; done
  pack
done
for n in bundle_sdpa_0_1 bundle_sdpa_0_1_1 bundle_gemm_0_1; do
  o=${n/bundle_/bundle_old_}; python3 scripts/compare-landscapes.py $S/$o.landscape.json $S/$n.landscape.json old new | tee -a $S/log.txt
done
rm -f $S/*.landscape.json; pack
left=$(( 580 - ($(date +%s) - T0) ))
log "GPU tests (new bundle), $left s left"
EVO_BINARY=$PWD/bundle/evo EVO_CACHE=/tmp/f-tests timeout $left bash scripts/gpu-tests.sh bundle/evo_tests > $S/gpu_tests.txt 2>&1
log "gpu tests: rc=$? $(grep -E '^\[  (PASSED|FAILED) \]|tests? from .* ran' $S/gpu_tests.txt | paste -sd' ' | cut -c1-200)"
grep -E '^\[  FAILED  \]' $S/gpu_tests.txt | head -20 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
