#!/usr/bin/env bash
# Call G (eleventh session, 4 GPUs of one host): issue 35's sweeps with each GPU's metrics in a
# profiling worker of their own (the measuring worker never loads CUPTI) and the large GREEN inputs
# drawn several at once; with the pool (now two warm workers a GPU) and without, sdpa_fp8 and
# gemm_fp16 on 1, 2 and 4 GPUs (scripts/gpu-devices.sh: warm compile cache, now with the reference
# kernel in it; the reference store emptied before each run; full gates; metrics as the defaults
# collect them), every run traced. Then whether CUPTI still shifts timings: one GPU, no pool,
# sdpa_fp8 exhaustive by default against --metrics-all (every candidate profiled as it goes), with
# the profiling worker and with the metrics in the measuring worker (EVO_METRICS_PROCESS=0), and
# where a 4-GPU gemm_fp16 run's first jobs go (EVO_GREEN_TIMES). Last, the GPU tests this touches.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/g.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/g-pool
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start.txt) ready"
for mode in pool nopool; do
  p=1; [ $mode = nopool ] && p=0
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_$mode
    EVO_POOL=$p EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/g-$prof timeout 150 bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ev\/s ... \1/' | cut -c1-220 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|workers started|inputs ahead|metrics of the best|quit|the first at" | cut -c1-200 >> $S/log.txt
    pack
  done
done
bundle/evo pool status >> $S/log.txt 2>&1; bundle/evo pool stop >> $S/log.txt 2>&1; cp /tmp/g-pool/pool.log $S/ 2>/dev/null
# CUPTI and the timings: one GPU, no pool, the same sweep three ways.
for n in default metrics_all metrics_all_inprocess; do
  args=""; env="EVO_POOL=0"
  [ $n != default ] && args="--metrics-all"
  [ $n = metrics_all_inprocess ] && env="EVO_POOL=0 EVO_METRICS_PROCESS=0"
  rm -rf /tmp/g-sdpa_fp8/reference; rm -f t_$n.db*
  t0=$(date +%s%N)
  env $env EVO_CACHE=/tmp/g-sdpa_fp8 timeout 100 bundle/evo --db t_$n.db run --profile sdpa_fp8 --strategy exhaustive --budget 1000 --devices 0 $args --no-sanitize -q > $S/taint_$n.txt 2>&1
  log "taint $n: rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time' $S/taint_$n.txt)"
  bundle/evo --db t_$n.db export-landscape 1 --to $S/landscape_taint_$n.json > /dev/null 2>&1
done
for n in metrics_all metrics_all_inprocess; do
  log "medians $n against default: $(python3 scripts/compare-landscapes.py $S/landscape_taint_default.json $S/landscape_taint_$n.json default $n 2>&1 | paste -sd' ' | cut -c1-400)"
done
pack
rm -rf /tmp/g-gemm_fp16/reference; rm -f gd.db*
EVO_GREEN_TIMES=$S/green_times_gemm.jsonl EVO_TRACE=$S/diag_gemm.trace.jsonl EVO_POOL=0 EVO_CACHE=/tmp/g-gemm_fp16 timeout 60 bundle/evo --db gd.db run --profile gemm_fp16 --strategy exhaustive --budget 1000 --devices all --no-sanitize -q > $S/diag_gemm.txt 2>&1
log "diagnostic gemm run: rc=$? $(grep -E '^time' $S/diag_gemm.txt)"
python3 scripts/trace-summary.py $S/diag_gemm.trace.jsonl 2>&1 | grep -vE "^  lane" | cut -c1-260 >> $S/log.txt
pack
left=$(( 560 - ($(date +%s) - T0) ))
log "tests with ${left} s left"
EVO_CACHE=/tmp/g-tests timeout $left bundle/evo_tests --gtest_filter='GpuPool.*:GpuGates.Metrics*:GpuReferenceStore.*:MetricGpu.*:GpuCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure" -A6 $S/gpu_tests.txt | head -60 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
