#!/usr/bin/env bash
# Call D (tenth session, 2 GPUs of one host; no 4-GPU kind lent). Call C saw sdpa_fp8's medians
# 0.3 % higher with the pool than without (gemm_fp16's not); the guess: CUPTI's hooks in the
# driver (cuptiProfilerInitialize, kept by a pooled worker from its warm-up and its last run's end)
# slow FAST's launches of 4-20 us kernels. The worker now takes them out (release_profiler) after
# its warm-up and between runs; EVO_METRICS_RELEASE=0 keeps them. Here, in one call:
#  1. the pool's GPU tests and the kill -9 test as changed;
#  2. one-GPU sdpa_fp8 sweeps alternated: no pool, pool (hooks out), pool (hooks kept), twice;
#  3. whether the same hooks move a run's own timings: exhaustive with --metrics-all (every
#     candidate profiled, so each is timed after a collection) against the default, no pool;
#  4. the 2-GPU sweeps of call C with the pool as it is now, against no pool.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/d.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
EVO_CACHE=/tmp/d-tests timeout 200 bundle/evo_tests --gtest_filter='GpuPool.*:GpuCli.AWorkerKilled*' > $S/tests.txt 2>&1
log "tests: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/tests.txt | paste -sd' ')"
grep -E 'Failure' -A6 $S/tests.txt | head -40 >> $S/log.txt; pack
EVO_POOL_DIR=/tmp/d-pool bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool (hooks out): rc=$? $(grep -c ready $S/pool_start.txt) ready"
EVO_POOL_DIR=/tmp/d-norel EVO_METRICS_RELEASE=0 bundle/evo pool start --devices all > $S/pool_norel_start.txt 2>&1
log "pool (hooks kept): rc=$? $(grep -c ready $S/pool_norel_start.txt) ready"
for r in 1 2; do
  for mode in nopool pool norel; do
    n=one_${mode}_$r
    case $mode in
      nopool) env="EVO_POOL=0" ;;
      pool) env="EVO_POOL_DIR=/tmp/d-pool" ;;
      norel) env="EVO_POOL_DIR=/tmp/d-norel EVO_METRICS_RELEASE=0" ;;
    esac
    env $env OUT=$S/$n EVO_CACHE=/tmp/d-sdpa_fp8 timeout 100 bash scripts/gpu-devices.sh sdpa_fp8 1000 "0" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices 0: rc" $S/$n/session.log | grep -oE 'wall=[0-9]+ ms.*ev[a-z]+/s' | head -1) $(grep -oE 'attach|warm worker' $S/$n/run_sdpa_fp8_0.txt 2>/dev/null | head -1)"
    pack
  done
done
for m in default metrics_all; do
  rm -f m_$m.db*; rm -rf /tmp/d-sdpa_fp8/reference
  extra=""; [ $m = metrics_all ] && extra="--metrics-all"
  EVO_POOL=0 EVO_CACHE=/tmp/d-sdpa_fp8 timeout 100 bundle/evo --db m_$m.db run --profile sdpa_fp8 --strategy exhaustive --budget 1000 --devices 0 --no-sanitize -q $extra > $S/m_$m.txt 2>&1
  log "sdpa_fp8 exhaustive $m: rc=$? $(grep -E '^time' $S/m_$m.txt)"
  bundle/evo --db m_$m.db export-landscape 1 --to $S/landscape_m_$m.json > /dev/null 2>&1
done
pack
for mode in pool nopool; do
  for prof in sdpa_fp8 gemm_fp16; do
    n=two_${prof}_$mode; env="EVO_POOL_DIR=/tmp/d-pool"; [ $mode = nopool ] && env="EVO_POOL=0"
    env $env EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/d-$prof timeout 120 bash scripts/gpu-devices.sh $prof 1000 "0 all" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing" $S/$n/session.log | sed -E 's/evaluations.s;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ev\/s ... \1/' | cut -c1-200 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|metrics of the best" | cut -c1-160 >> $S/log.txt
    pack
  done
done
EVO_POOL_DIR=/tmp/d-pool bundle/evo pool stop >> $S/log.txt 2>&1; EVO_POOL_DIR=/tmp/d-norel bundle/evo pool stop >> $S/log.txt 2>&1
cp /tmp/d-pool/pool.log $S/pool.log 2>/dev/null; cp /tmp/d-norel/pool.log $S/pool_norel.log 2>/dev/null
log "done after $(( $(date +%s) - T0 )) s"; pack
