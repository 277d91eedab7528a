#!/usr/bin/env bash
# Call J (eleventh session, 4 GPUs of one host), after call I: a run's own profiling worker no
# longer makes CUPTI's set-up beside its measuring lane (call I: the runs without the pool, whose
# profiling workers then made it mid-run, stalled both GPUs for 0.19 s three times, and gemm_fp16
# on 4 GPUs fell to 1.45x); it makes it at its first collection, while its lane waits. The same
# sweeps with the pool and without, every collection's steps written, then the GPU tests of the
# pool, the metrics and the reference store.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/j.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/j-pool
export EVO_METRICS_TIMES=$S/metrics_times_pool.jsonl
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start.txt) ready"
for mode in pool nopool; do
  p=1; [ $mode = nopool ] && p=0 && export EVO_METRICS_TIMES=$S/metrics_times_nopool.jsonl
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_$mode
    EVO_POOL=$p EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/j-$prof timeout 150 bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ev\/s ... \1/' | cut -c1-220 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|workers started|inputs ahead|metrics of the best|quit|the first at" | cut -c1-200 >> $S/log.txt
    pack
  done
done
bundle/evo pool status >> $S/log.txt 2>&1; bundle/evo pool stop >> $S/log.txt 2>&1; cp /tmp/j-pool/pool.log $S/ 2>/dev/null
unset EVO_METRICS_TIMES
for f in pool nopool; do
  log "metrics steps, $f: $(python3 -c "
import json,sys
rows=[json.loads(l) for l in open('$S/metrics_times_$f.jsonl')]
keys=sorted({k for r in rows for k in r})
import statistics as st
print(len(rows),'collections;', ', '.join('%s median %.4f max %.4f'%(k,st.median([r.get(k,0) for r in rows]),max(r.get(k,0) for r in rows)) for k in keys))
" 2>&1 | cut -c1-900)"
done
pack
left=$(( 560 - ($(date +%s) - T0) ))
log "GPU tests of the pool, the metrics and the reference store, with ${left} s left"
EVO_CACHE=/tmp/j-tests timeout $left bundle/evo_tests --gtest_filter='GpuPool.*:GpuGates.Metrics*:GpuReferenceStore.*:MetricGpu.*:GpuCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|Failure" -A6 $S/gpu_tests.txt | head -60 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
