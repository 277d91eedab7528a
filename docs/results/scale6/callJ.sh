#!/usr/bin/env bash
# Call J (one H100, `nvidia-h100-x1`), after call I: the idle buffer sets' expected checksums are
# now known without reading the buffers (poison: computed on the host once a size; inputs and
# inouts: their fill's checksum), so idling a set is no longer a sync a buffer; scratch keeps only
# its zones watched. GREEN's fault tests, the guard tests, the GREEN tests of inout, two-launch and
# fp8 profiles, the killed worker; then the sdpa_fp8 sweep on one GPU before the idle sets
# (bundle_h: call H's binary) and now, alternated, for what the checks cost.
# carry ["bundle.tar.xz", "bundle_h.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
rm -rf bundle bundle_h; tar xJf bundle.tar.xz; mkdir -p bundle_h && tar xJf bundle_h.tar.xz -C bundle_h --strip-components=1
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/j.tgz -C $S . ; }
export LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

EVO_BINARY=$PWD/bundle/evo EVO_CACHE=/tmp/j-tests timeout 240 bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GuardedDevice.*:GpuGates.Fp8Attention*:GpuGates.Inout*:GpuGates.TwoLaunch*:GpuGates.OffByOne*:GpuGates.Fault*:GpuCli.AWorkerKilled*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of|Expected|PLANT=5" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt; pack

EVO_BINARY=$PWD/bundle/evo EVO_CACHE=/tmp/j-sdpa bundle/evo compile sdpa_fp8 --all > /dev/null 2>&1
for b in bundle_h bundle bundle_h bundle; do
  rm -rf /tmp/j-sdpa/reference $S/$b.db*
  t0=$(date +%s%N)
  EVO_BINARY=$PWD/$b/evo LD_LIBRARY_PATH=$PWD/$b/lib EVO_CACHE=/tmp/j-sdpa timeout 120 $b/evo --db $S/$b.db run --profile sdpa_fp8 \
    --strategy exhaustive --budget 1000 --devices 0 --no-sanitize -q > $S/sweep_$b.txt 2>&1
  log "$b: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^time' $S/sweep_$b.txt | paste -sd' ' | cut -c1-400)"
  python3 -c "
import sqlite3, statistics as st
c = sqlite3.connect('$S/$b.db')
g = [r[0] * 1000 for r in c.execute(\"select seconds_green from evaluations where status = 'measured'\")]
t = [sum(r) * 1000 for r in c.execute(\"select seconds_green, seconds_fast, seconds_metrics from evaluations where status = 'measured'\")]
print('  GREEN ms a measured candidate: median %.2f, mean %.2f; GPU ms (GREEN + FAST + metrics) mean %.1f over %d' % (st.median(g), st.mean(g), st.mean(t), len(g)))" | tee -a $S/log.txt
  $b/evo --db $S/$b.db export-landscape 1 --to $S/landscape_$b.json > /dev/null 2>&1
done
python3 scripts/compare-landscapes.py $S/landscape_bundle_h.json $S/landscape_bundle.json before after | tee -a $S/log.txt
rm -f $S/*.db $S/*.db-*; log "done after $(( $(date +%s) - T0 )) s"; pack
