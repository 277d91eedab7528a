#!/usr/bin/env bash
# Call V (fourteenth session, one H200): a fill's device copy proved against the checksum its bytes
# already have (one CPU pass over them fewer), against the build before (6b3cf03), alternated:
# gemm_fp16's first GREEN from an empty reference store, by step (EVO_GREEN_TIMES); then the GPU
# tests of the guard, the gates, GREEN's safety and the CLI on the new build, in the time left.
# carry ["bundle.tar.xz", "bundle_old.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
[ -x bundle_old/evo ] && [ bundle_old/evo -nt bundle_old.tar.xz ] || { rm -rf bundle_old; tar xJf bundle_old.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/v.tgz -C $S . ; }
export LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
EVO_CACHE=/tmp/v-gemm bundle/evo compile gemm_fp16 --all > /dev/null 2>&1
for k in 1 2 3; do
  for b in bundle_old bundle; do
    rm -rf /tmp/v-gemm/reference; rm -f /tmp/v.db*
    EVO_BINARY=$PWD/$b/evo EVO_GREEN_TIMES=$S/green_${b}_$k.jsonl EVO_CACHE=/tmp/v-gemm $b/evo --db /tmp/v.db run --profile gemm_fp16 \
      --strategy exhaustive --budget 40 --devices 0 --no-sanitize -q > $S/run_${b}_$k.txt 2>&1
    log "$b $k: rc=$? first GREEN: $(head -n 1 $S/green_${b}_$k.jsonl | python3 -c 'import json,sys; l=json.loads(sys.stdin.read()); print(round(l["green_s"],4), {k: round(v,4) for k,v in l["steps"].items() if k.startswith("references")})')"
  done
done
pack
left=$(( 330 - ($(date +%s) - T0) ))
log "GPU tests with ${left} s left"
export EVO_BINARY=$PWD/bundle/evo
EVO_CACHE=/tmp/v-tests timeout $left bundle/evo_tests --gtest_filter='GuardedDevice.*:GpuGates.*:GpuGreenSafety.*:GpuCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
