#!/usr/bin/env bash
# Call H (eleventh session, 4 GPUs of one host), after call G: the same sweeps with the pool and
# without, now with a kernel reference's outputs made on each worker's own GPU instead of stored and
# read back (call G: 0.29 s to store and 0.30 s to read against 0.024 s of launches, gemm_fp16), and
# each GPU's profiling worker started once its lane answered its first job (call G: eight driver
# starts at once held a 4-GPU run's first candidates back by 0.6 s). Every collection's steps are
# written (EVO_METRICS_TIMES), the pool's and the runs' own workers' apart, to see why a pool's
# profiling worker took 26 ms a collection where a run's own took 9-10 ms. Then every GPU test.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/h.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/h-pool
export EVO_METRICS_TIMES=$S/metrics_times_pool.jsonl
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start.txt) ready"
for mode in pool nopool; do
  p=1; [ $mode = nopool ] && p=0 && export EVO_METRICS_TIMES=$S/metrics_times_nopool.jsonl
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_$mode
    EVO_POOL=$p EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/h-$prof timeout 150 bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ev\/s ... \1/' | cut -c1-220 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|workers started|inputs ahead|metrics of the best|quit|the first at" | cut -c1-200 >> $S/log.txt
    pack
  done
done
bundle/evo pool status >> $S/log.txt 2>&1; bundle/evo pool stop >> $S/log.txt 2>&1; cp /tmp/h-pool/pool.log $S/ 2>/dev/null
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
left=$(( 570 - ($(date +%s) - T0) ))
log "every GPU test, with ${left} s left"
EVO_CACHE=/tmp/h-tests timeout $left bundle/evo_tests --gtest_filter='Gpu*:GreenCompareOnDevice.*:MetricGpu*:BuiltinCache*:WorkerProtocol.*:Buffers.*:SdpaRef*:*OnDevice*:PoolWorker.*:PoolCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|Failure" -A6 $S/gpu_tests.txt | head -60 | tee -a $S/log.txt
grep -E "^\[ RUN|^\[       OK" $S/gpu_tests.txt | tail -2 >> $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
