#!/usr/bin/env bash
# Call C (tenth session, 2 GPUs of one host; call B, written for 4 GPUs, was refused: the 4-GPU
# kinds were no longer lent): issue 35's sweeps with and without the pool of warm workers,
# alternated (pool, no pool, no pool, pool), each sweep sdpa_fp8 and gemm_fp16 on 1 and 2 GPUs (scripts/gpu-devices.sh: warm compile cache, the reference store emptied before each run,
# full gates, metrics as the defaults collect them), every run traced. Then where a 4-GPU run's
# first jobs go (EVO_GREEN_TIMES), GREEN's inputs drawn on this host's cores alone (fb: the
# coordinator's store_fills_ahead), and the kill -9 GPU test as changed for four GPUs.
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
for mode in pool nopool nopool pool; do
  p=1; [ $mode = nopool ] && p=0
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_$mode; [ -e $S/$n.trace.jsonl ] && n=${n}_b
    EVO_POOL=$p EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/c-$prof timeout 150 bash scripts/gpu-devices.sh $prof 1000 "0 all" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing" $S/$n/session.log | sed -E 's/evaluations.s;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ev\/s ... \1/' | cut -c1-200 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|workers started|metrics of the best|quit" | cut -c1-160 >> $S/log.txt
    pack
  done
done
# Where the first jobs of a 2-GPU pooled run go.
rm -rf /tmp/c-sdpa_fp8/reference; rm -f g.db*
EVO_GREEN_TIMES=$S/green_times.jsonl EVO_TRACE=$S/diag.trace.jsonl EVO_CACHE=/tmp/c-sdpa_fp8 timeout 60 bundle/evo --db g.db run --profile sdpa_fp8 --strategy exhaustive --budget 1000 --devices all --no-sanitize -q > $S/diag_run.txt 2>&1
log "diagnostic run: rc=$? $(grep -E '^time' $S/diag_run.txt)"
for i in 1 2 3; do log "fills ahead alone, sdpa_fp8: $(bundle/fb profiles/sdpa_fp8.json 2>&1)"; done
log "fills ahead alone, 16 cores: $(taskset -c 0-15 bundle/fb profiles/sdpa_fp8.json 2>&1)"
bundle/evo pool status >> $S/log.txt 2>&1; bundle/evo pool stop >> $S/log.txt 2>&1; cp /tmp/c-pool/pool.log $S/ 2>/dev/null
EVO_CACHE=/tmp/c-tests timeout 120 bundle/evo_tests --gtest_filter='GpuCli.AWorkerKilled*' > $S/tests.txt 2>&1
log "kill test: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/tests.txt | paste -sd' ')"
log "done after $(( $(date +%s) - T0 )) s"; pack
