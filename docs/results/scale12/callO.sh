#!/usr/bin/env bash
# Call O (twelfth session, 4 GPUs of one host), after call N: the run's end profiles its best in
# one collection (collect_metrics_batch; in call N ten collections on four GPUs took as long as on
# one: CUPTI's calls take turns host-wide), and every job names the trial store (the end's metrics
# jobs drew their inputs, 0.2 s). Before that (call N): the profiling worker and FAST read
# their inputs from the trial store (a profiling worker's first collection on a GPU drew the
# objective's inputs, 0.22 s); a pool keeps its profiler sessions 300 idle seconds (30 let GPUs 2-3's
# go while the 1- and 2-GPU sweeps ran, so the 4-GPU end profiled on one GPU); read_file with
# read(2). The issue's sweeps with the pool twice (the second with GREEN's steps written) and once
# with the end's candidates each alone (EVO_END_METRICS_BATCH=0); then every GPU test.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/o.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/o-pool
# EVO_METRICS_TIMES is part of the environment a run must share with the pool's workers to attach:
# set before the pool's start, and kept for its sweeps.
sweeps() {  # $1: name; the environment says pool or not
  local n prof
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_$1
    EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/o-$prof \
      timeout 150 bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ev\/s ... \1/' | cut -c1-220 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|inputs ahead|metrics of the best|gpu [0-9]: " | cut -c1-200 >> $S/log.txt
    pack
  done
}
export EVO_METRICS_TIMES=$S/metrics_times_pool.jsonl
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start.txt) ready"
bundle/evo pool status >> $S/log.txt 2>&1
EVO_POOL=1 sweeps pool
EVO_POOL=1 EVO_END_METRICS_BATCH=0 sweeps poolalone
EVO_POOL=1 EVO_GREEN_TIMES=$S/green_times_pool2.jsonl sweeps pool2
bundle/evo pool status >> $S/log.txt 2>&1
bundle/evo pool stop >> $S/log.txt 2>&1; cp /tmp/o-pool/pool.log $S/pool.log 2>/dev/null
unset EVO_METRICS_TIMES
pack
left=$(( 575 - ($(date +%s) - T0) ))
log "GPU tests with ${left} s left"
EVO_CACHE=/tmp/o-tests timeout $left bundle/evo_tests --gtest_filter='Gpu*:GreenCompareOnDevice.*:MetricGpu*:BuiltinCache*:WorkerProtocol.*:Buffers.*:SdpaRef*:*OnDevice*:PoolWorker.*:PoolCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|Failure" -A6 $S/gpu_tests.txt | head -60 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
