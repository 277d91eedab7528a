#!/usr/bin/env bash
# Kept as run; the change it measures was reverted after it (README section 3): the worker is as it was.
# Call Z (2 GPUs of one host): CUPTI's set-up made ahead, from each worker's second job, in runs
# that profile their best only at their end (exhaustive, random), against EVO_METRICS_PREWARM=0
# (the set-up left to the end, as in calls X and Y), alternated, on 1 and 2 GPUs; sdpa_fp8 and
# gemm_fp16 (scripts/gpu-devices.sh: warm compile cache, reference store emptied before each run),
# every run traced. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/z.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
for i in 1 2; do
  for pw in 1 0; do
    [ $i = 2 ] && pw=$((1 - pw))  # the second round in the other order
    for prof in sdpa_fp8 gemm_fp16; do
      n=${prof}_${i}_pw$pw
      EVO_METRICS_PREWARM=$pw EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/z-$prof timeout 90 bash scripts/gpu-devices.sh $prof 1000 "0 0,1" > /dev/null 2>&1
      log "$n: rc=$? $(grep -E "devices [0-9,]+: rc|x one GPU|verdicts differing|median ratio" $S/$n/session.log | sed -E 's/;.*wall ([0-9.]+ s after)/ ... wall \1/; s/, the first result.*//' | cut -c1-260 | paste -sd' ')"
      python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|metrics of the best|the first at|gpu [01]: .*jobs" | cut -c1-200 >> $S/log.txt
      pack
    done
  done
done
log "done after $(( $(date +%s) - T0 )) s"; pack
