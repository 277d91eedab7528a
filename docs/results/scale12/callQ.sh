#!/usr/bin/env bash
# Call Q (twelfth session, 4 GPUs of one host), after call O: the compile pool starts its workers
# when a compile first needs one (forking 64 up front held the first candidate back 37 ms), and a
# run's first top-up admits enough candidates to start every GPU (the whole `ahead`, 132, held it
# back 23-60 ms). Predicted: the first job 0.08 s -> <= 0.03 s after the run's start (gemm_fp16),
# 0.13-0.16 s -> <= 0.08 s (sdpa_fp8); gemm_fp16 4 GPUs 3.44-3.51x -> 3.55-3.65x. The sweeps with the
# pool twice; then the GPU tests of the CLI, the pool and the end's metrics, in what time is left.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/q.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/q-pool
sweeps() {  # $1: name
  local n prof
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_$1
    EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/q-$prof \
      timeout 150 bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ev\/s ... \1/' | cut -c1-220 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|inputs ahead|metrics of the best|gpu [0-9]: " | cut -c1-200 >> $S/log.txt
    pack
  done
}
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start.txt) ready"
EVO_POOL=1 sweeps pool
EVO_POOL=1 sweeps pool2
bundle/evo pool stop >> $S/log.txt 2>&1
pack
left=$(( 300 - ($(date +%s) - T0) ))
log "GPU tests with ${left} s left"
EVO_CACHE=/tmp/q-tests timeout $left bundle/evo_tests --gtest_filter='GpuCli.*:GpuPool.*:GpuGates.MetricsAtTheRunsEnd*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[       OK \]' $S/gpu_tests.txt | paste -sd' ' | cut -c1-900)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
