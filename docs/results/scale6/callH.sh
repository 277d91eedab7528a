#!/usr/bin/env bash
# Call H (2 GPUs of one host, `nvidia-h100-x2`), after call G found PLANT=5 (a store 64 MiB past
# its output) measured: FAST's L2-flush buffer is now zeroed scratch checked with GREEN's kept
# copies. GREEN's fault tests again with the guard tests, the metric tests and the sdpa GREEN test;
# then whether cuptiRangeProfilerStart's cost (80 ms a pass in call G) depends on the counter
# image's room for ranges (EVO_METRICS_MAX_RANGES=1 against 16); then the sdpa_fp8 sweep on 1 and
# 2 GPUs with the code as it now is.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/h.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

EVO_CACHE=/tmp/h-tests timeout 330 bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GuardedDevice.*:MetricGpu.*:GpuGates.Metrics*:GpuGates.Fp8Attention*:GpuCli.AWorkerKilled*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of|Expected|PLANT=5" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt; pack

for room in 16 1; do
  rm -f $S/r$room.db*
  EVO_METRICS_MAX_RANGES=$room EVO_METRICS_TIMES=$S/ranges_$room.jsonl EVO_CACHE=/tmp/h-gemm timeout 90 bundle/evo --db $S/r$room.db \
    run --profile gemm_fp16 --strategy exhaustive --budget 40 --devices 0 --no-sanitize -q > $S/ranges_$room.txt 2>&1
  log "max ranges $room: rc=$? $(grep -E '^time' $S/ranges_$room.txt)"
  python3 -c "
import json,statistics as st
rows=[json.loads(l) for l in open('$S/ranges_$room.jsonl')]
print('  collections', len(rows), ' '.join('%s median %.1f ms' % (k, 1000*st.median(r.get(k,0) for r in rows)) for k in ('pass_start','pass_stop','passes','config','disable')))" | tee -a $S/log.txt
done; pack

OUT=$S/sdpa EVO_CACHE=/tmp/h-sdpa timeout 150 bash scripts/gpu-devices.sh sdpa_fp8 1000 "0 0,1" > /dev/null 2>&1
log "sdpa: rc=$?"
grep -E "devices|x one GPU|configs:|median ratio" $S/sdpa/session.log | cut -c1-700 | tee -a $S/log.txt
rm -f $S/*.db $S/*.db-*; log "done after $(( $(date +%s) - T0 )) s"; pack
