#!/usr/bin/env bash
# Call C (fifteenth session, 4 x H200): the issue's protocol on the final build, 4d2b861, on four
# GPUs: scripts/gpu-devices.sh with the pool, gemm_fp16 and sdpa_fp8 on 1, 2 and 4 GPUs, three passes
# (call Q on the build before the lane queue and the fills: gemm_fp16 3.51-3.57x, sdpa_fp8 3.69x).
# Predicted (fourteenth session: the gaps between jobs halved, 2 GPUs 1.96-2.07x in call B):
# gemm_fp16 3.6-3.8x on 4 GPUs, sdpa_fp8 3.65-3.85x; verdicts identical, medians within noise.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/c-pool
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start.txt) ready"
for pass in pool pool2 pool3; do
  for prof in gemm_fp16 sdpa_fp8; do
    n=${prof}_$pass
    EVO_POOL=1 EVO_GREEN_TIMES=$S/$n.green.jsonl EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/c-$prof \
      timeout 120 bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*//' | cut -c1-160 | paste -sd' ')"
    pack
  done
done
bundle/evo pool stop >> $S/log.txt 2>&1
left=$(( 560 - ($(date +%s) - T0) ))
[ $left -gt 60 ] || { log "no time left for the tests"; pack; exit 0; }
log "GPU tests with ${left} s left"
EVO_CACHE=/tmp/c-tests timeout $left bundle/evo_tests --gtest_filter='GpuGreenSafety.Exhaustive*:GpuCli.AWorkerKilled*:GpuPool.APoolWorkerKilled*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
