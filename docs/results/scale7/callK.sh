#!/usr/bin/env bash
# Call K (one H100, `nvidia-h100-x1`): the faster integrity scan, the kept CUPTI session at the
# run's end, the baseline's GREEN by step. GPU tests of the metrics, the guards and GREEN's fault
# detection; then the sdpa_fp8 sweep on one GPU with the binary before this session (bundle_b) and
# now, alternated, and now with EVO_METRICS_KEEP_SESSION=0. carry ["bundle.tar.xz", "bundle_b.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
rm -rf bundle bundle_b; tar xJf bundle.tar.xz; mkdir -p bundle_b && tar xJf bundle_b.tar.xz -C bundle_b --strip-components=1
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/k.tgz -C $S . ; }
export LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

EVO_BINARY=$PWD/bundle/evo EVO_CACHE=/tmp/k-tests timeout 300 bundle/evo_tests --gtest_filter='MetricGpu.*:GuardedDevice.*:GpuGreenSafety.*:GpuGates.Metrics*:GpuGates.Fault*:GpuGates.OffByOne*:GpuGates.Inout*:GpuCli.AWorkerKilled*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of|Expected" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt; pack

EVO_BINARY=$PWD/bundle/evo EVO_CACHE=/tmp/k-sdpa bundle/evo compile sdpa_fp8 --all > /dev/null 2>&1
i=0
for b in bundle_b bundle bundle_b bundle bundle:nokeep; do
  i=$((i+1)); d=${b%%:*}; tag=$b; env=""; [ "$b" = bundle:nokeep ] && { env="EVO_METRICS_KEEP_SESSION=0"; tag=nokeep; }
  rm -rf /tmp/k-sdpa/reference $S/r.db*
  t0=$(date +%s%N)
  env $env EVO_GREEN_TIMES=$S/green_${i}_$tag.jsonl EVO_METRICS_TIMES=$S/metrics_${i}_$tag.jsonl EVO_BINARY=$PWD/$d/evo \
    LD_LIBRARY_PATH=$PWD/$d/lib EVO_CACHE=/tmp/k-sdpa timeout 120 $d/evo --db $S/r.db run --profile sdpa_fp8 \
    --strategy exhaustive --budget 1000 --devices 0 --no-sanitize -q > $S/sweep_${i}_$tag.txt 2>&1
  log "$i $tag: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^time' $S/sweep_${i}_$tag.txt | paste -sd' ' | cut -c1-400)"
  python3 -c "
import sqlite3, statistics as st
c = sqlite3.connect('$S/r.db')
g = [r[0] * 1000 for r in c.execute(\"select seconds_green from evaluations where status = 'measured'\")]
t = [sum(r) * 1000 for r in c.execute(\"select seconds_green, seconds_fast, seconds_metrics from evaluations where status = 'measured'\")]
print('  GREEN ms a measured candidate: median %.2f, mean %.2f; GPU ms (GREEN + FAST + metrics) mean %.1f over %d' % (st.median(g), st.mean(g), st.mean(t), len(g)))" | tee -a $S/log.txt
  $d/evo --db $S/r.db export-landscape 1 --to $S/landscape_${i}_$tag.json > /dev/null 2>&1
done
python3 scripts/compare-landscapes.py $S/landscape_1_bundle_b.json $S/landscape_2_bundle.json before after | tee -a $S/log.txt
python3 scripts/compare-landscapes.py $S/landscape_3_bundle_b.json $S/landscape_4_bundle.json before after | tee -a $S/log.txt
rm -f $S/*.db $S/*.db-*; log "done after $(( $(date +%s) - T0 )) s"; pack
