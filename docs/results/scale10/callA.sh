#!/usr/bin/env bash
# Call A (tenth session, 4 GPUs of one host): the pool of warm workers. First the GPU tests of the
# pool and of what it touches (faults through a pooled worker, the kill -9, GREEN's safety on every
# GPU), then one quick sweep with and without the pool, to see it work before call B measures.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/a.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
EVO_CACHE=/tmp/a-tests timeout 330 bundle/evo_tests --gtest_filter='GpuPool.*:PoolWorker.*:PoolCli.*:WorkerProtocol.*:GpuCli.AWorkerKilled*:GpuGreenSafety.ExhaustiveRun*' > $S/tests.txt 2>&1
log "tests: rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/tests.txt | paste -sd' ')"
grep -E '^\[  FAILED|Failure' -A4 $S/tests.txt | head -60 >> $S/log.txt; pack
export EVO_POOL_DIR=/tmp/a-pool
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(paste -sd' ' $S/pool_start.txt | cut -c1-400)"
for mode in pool nopool; do
  p=1; [ $mode = nopool ] && p=0
  EVO_POOL=$p EVO_TRACE=$S/sdpa_$mode.trace.jsonl OUT=$S/sdpa_$mode EVO_CACHE=/tmp/a-sdpa timeout 150 bash scripts/gpu-devices.sh sdpa_fp8 1000 "0 all" > /dev/null 2>&1
  log "sdpa_fp8 $mode: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing" $S/sdpa_$mode/session.log | cut -c1-260 | paste -sd' ')"
  python3 scripts/trace-summary.py $S/sdpa_$mode.trace.jsonl 2>&1 | grep -E "== run|workers started|metrics of the best|quit" | cut -c1-160 >> $S/log.txt
  pack
done
bundle/evo pool status >> $S/log.txt 2>&1; bundle/evo pool stop >> $S/log.txt 2>&1
cp /tmp/a-pool/pool.log $S/ 2>/dev/null
log "done after $(( $(date +%s) - T0 )) s"; pack
