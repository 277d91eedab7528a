#!/usr/bin/env bash
# Call C (eighteenth session, 4 x H200): the workers read the run's profile at their warm probe
# (the measuring workers at the run's start, each GPU's profiling worker when it is started), not
# in their first job. Then: the protocol as in call B (scripts/gpu-devices.sh PROF 1000 "0 0,1 all" 3,
# the pool), one traced run each of sdpa_fp8 on "0,1" and gemm_fp16 on "all" (the spans at the start
# and the end), and every GPU test (scripts/gpu-tests.sh).
# Predicted: each worker's "worker ready, profile read" span of its first job 15-21 ms -> under 2 ms
# (a "profile read ahead" span beside the probe instead); the best's metrics at the end 85-90 ms ->
# 65-75 ms; the run 30-40 ms shorter on any number of GPUs: gemm_fp16's 4-GPU ratio of medians
# +0.02-0.05 (call B 3.64x; its 2-s sweep feels 35 ms), sdpa_fp8's within noise (call B 2.00x, 3.77x).
# Every GPU test passes (the new WorkerProtocol.AWarmProbeNamingTheProfileReadsItAhead among them).
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/c-pool
bundle/evo pool start --devices all > $S/pool.txt 2>&1; log "pool: rc=$? $(grep -c ready $S/pool.txt) ready"
for prof in sdpa_fp8 gemm_fp16; do
  EVO_POOL=1 OUT=$S/$prof EVO_CACHE=/tmp/c-$prof timeout 200 bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" 3 > /dev/null 2>&1
  log "$prof: rc=$?"; grep -E "evaluations/s|verdicts differing" $S/$prof/session.log | sed -E 's/; run [0-9]+ .*//' | cut -c1-200 | tee -a $S/log.txt
  pack
done
for t in "sdpa_fp8 0,1" "gemm_fp16 all"; do
  set -- $t; n=trace_$1_${2/,/_}; rm -rf /tmp/c-$1/reference
  EVO_POOL=1 EVO_CACHE=/tmp/c-$1 EVO_TRACE=$S/$n.jsonl timeout 60 bundle/evo --db /tmp/$n.db run --profile $1 --strategy exhaustive \
    --budget 1000 --devices $2 --no-sanitize -q > $S/$n.txt 2>&1
  log "$n: rc=$? $(grep -E '^time' $S/$n.txt | cut -c1-200)"
done
bundle/evo pool stop >> $S/log.txt 2>&1
pack
left=$(( 575 - ($(date +%s) - T0) ))
log "GPU tests, $left s left"
EVO_CACHE=/tmp/c-tests timeout $left bash scripts/gpu-tests.sh bundle/evo_tests > $S/gpu_tests.txt 2>&1
log "gpu tests: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? from .* ran' $S/gpu_tests.txt | paste -sd' ' | cut -c1-300)"
grep -E '^\[  FAILED  \]' $S/gpu_tests.txt | head -20 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
