#!/usr/bin/env bash
# Call 2 (the same 4-GPU machine, right after call 1): the GPU tests of this week's GPU paths; two
# queue workers on GPUs 0 and 1 against --devices 0,1 (scripts/gpu-queue.sh, PostgreSQL from
# pgdist.tar.xz); the README's main job from an empty database and a cold cache; Kernel Tuner's
# vector_add and convolution through evo.tune, and vector_add with a right and a wrong answer; then
# the hub's convolution_milo T1 file, exhaustive on every GPU, for what time is left.
# carry ["bundle.tar.xz", "pgdist.tar.xz", "kt-examples"] (bundle packed by tar cJf: the 64 MiB limit).
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }  # carried packed (the 64 MiB limit)
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c2.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
R=docs/results/scale4
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
EVO_CACHE=/tmp/c2-tests timeout 150 bundle/evo_tests \
  --gtest_filter='MetricGpu.*:GpuGreenSafety*:GuardedDevice*:GpuCli.AWorkerKilled*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of" $S/gpu_tests.txt | head -20 | tee -a $S/log.txt; pack

OUT=$S/queue EVO_CACHE=/tmp/c-sdpa_fp8 timeout 150 bash scripts/gpu-queue.sh sdpa_fp8 1000 > /dev/null 2>&1
log "queue: rc=$?"; cat $S/queue/session.log >> $S/log.txt; tail -n 12 $S/queue/session.log; pack

t0=$(date +%s%N)
EVO_CACHE=/tmp/c2-main timeout 90 bundle/evo --db $S/main.db run --budget 200 > $S/main_job.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|profile ' $S/main_job.txt | paste -sd' ' | cut -c1-600)"
pack

for n in vector_add convolution; do
  t0=$(date +%s%N)
  EVO_TUNE_BUDGET=100 OUT=$PWD/kt-examples EVO_CACHE=/tmp/c2-kt timeout 120 examples/kernel_tuner/python/run-kt-example.sh $n > $S/kt_$n.txt 2>&1
  log "evo.tune $n: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best' $S/kt_$n.txt | paste -sd' ' | cut -c1-400)"
  grep -cE "time=" $S/kt_$n.txt | sed 's/^/  configurations timed: /' | tee -a $S/log.txt
  grep -oE ": (green|compile|static|crash|timeout)[a-z_ ]*" $S/kt_$n.txt | sort | uniq -c | tee -a $S/log.txt
  for d in kt-examples/$n/evo-*; do cp -r $d $S/kt_${n}_folder; rm -f $S/kt_${n}_folder/data/*.npy; done
done
PYTHONPATH=$PWD/python EVO_CACHE=/tmp/c2-kt timeout 90 python3 $R/vector_add_answer.py > $S/kt_answer.txt 2>&1
log "vector_add with an answer: rc=$? $(grep -E '^answer' $S/kt_answer.txt | paste -sd' ')"; pack

left=$(( 560 - ($(date +%s) - T0) ))
log "convolution_milo T1, exhaustive, --devices all, --time-limit $left s"
if [ $left -gt 60 ]; then
  EVO_CACHE=/tmp/c2-milo timeout $((left + 20)) bundle/evo --db $S/milo.db run --profile tests/data/t1/convolution_milo.json \
    --strategy exhaustive --budget 5000 --devices all --time-limit $((left - 15)) > $S/milo.txt 2>&1
  log "convolution_milo: rc=$? $(grep -E '^run [0-9]|^best|^pipeline|^time|reference' $S/milo.txt | paste -sd' ' | cut -c1-700)"
  bundle/evo --db $S/milo.db export-landscape 1 --to $S/landscape_convolution_milo_h100.json > /dev/null 2>&1
fi
log done; pack
