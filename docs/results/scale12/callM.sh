#!/usr/bin/env bash
# Call M (twelfth session, 4 GPUs of one host): GREEN's inputs drawn once a host (fill claims) and
# a pool's profiling workers keeping their profiler sessions between runs. The issue's sweeps with
# the pool; the same with the sessions ended after each run (EVO_POOL_KEEP_PROFILER_S=0, as in
# scale11's call J); without the pool, and without the pool nor the claims (EVO_FILL_CLAIMS=0).
# Then the GPU tests of the pool, the metrics, the reference store and the CLI.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/m.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/m-pool
# EVO_METRICS_TIMES is part of the environment a run must share with the pool's workers to attach:
# set before each pool's start, and kept for its sweeps.
sweeps() {  # $1: name; the environment says pool or not
  local n prof
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_$1
    EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/m-$prof \
      timeout 150 bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ev\/s ... \1/' | cut -c1-220 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|inputs ahead|metrics of the best|gpu [0-9]: " | cut -c1-200 >> $S/log.txt
    pack
  done
}
pool_start() {
  t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start_$1.txt 2>&1
  log "pool start ($1): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start_$1.txt) ready"
  bundle/evo pool status >> $S/log.txt 2>&1
}
export EVO_METRICS_TIMES=$S/metrics_times_pool.jsonl
pool_start keep
EVO_POOL=1 sweeps pool
bundle/evo pool status >> $S/log.txt 2>&1
bundle/evo pool stop >> $S/log.txt 2>&1; cp /tmp/m-pool/pool.log $S/pool_keep.log 2>/dev/null
export EVO_METRICS_TIMES=$S/metrics_times_poolnokeep.jsonl
EVO_POOL_KEEP_PROFILER_S=0 pool_start nokeep
EVO_POOL=1 sweeps poolnokeep
bundle/evo pool stop >> $S/log.txt 2>&1
EVO_METRICS_TIMES=$S/metrics_times_nopool.jsonl EVO_POOL=0 sweeps nopool
EVO_METRICS_TIMES=$S/metrics_times_nopoolnoclaims.jsonl EVO_POOL=0 EVO_FILL_CLAIMS=0 sweeps nopoolnoclaims
unset EVO_METRICS_TIMES
pack
left=$(( 560 - ($(date +%s) - T0) ))
log "GPU tests with ${left} s left"
EVO_CACHE=/tmp/m-tests timeout $left bundle/evo_tests --gtest_filter='GpuPool.*:GpuReferenceStore.*:MetricGpu.*:GpuGates.Metrics*:GpuCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|Failure" -A6 $S/gpu_tests.txt | head -60 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
