#!/usr/bin/env bash
# Call T (fourteenth session, 2 x H200): each GPU holds its next candidate queued and starts it as the
# current ends, and re-times the baseline on its own thread (engine/run.cpp), against the build
# before (a7d7da8), side by side: the same exhaustive sweeps of gemm_fp16 and sdpa_fp8 on GPU 0 and
# on GPUs 0,1, from a warm compile cache, the reference store emptied before each run (as
# scripts/gpu-devices.sh does), the two builds alternated, twice; traced. Then the GPU tests of the
# CLI, the GREEN safety, the pool and the worker protocol (faults, lost workers) on the new build.
# carry ["bundle.tar.xz", "bundle_old.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
[ -x bundle_old/evo ] && [ bundle_old/evo -nt bundle_old.tar.xz ] || { rm -rf bundle_old; tar xJf bundle_old.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/t.tgz -C $S . ; }
export LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
for prof in gemm_fp16 sdpa_fp8; do
  for b in bundle bundle_old; do
    t0=$(date +%s%N); EVO_BINARY=$PWD/$b/evo EVO_CACHE=/tmp/t-$prof $b/evo compile $prof --all > $S/compile_${prof}_$b.txt 2>&1
    log "$b compile $prof --all: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms $(tail -n 1 $S/compile_${prof}_$b.txt | cut -c1-150)"
  done
done
for round in 1 2; do
  for prof in gemm_fp16 sdpa_fp8; do
    for b in bundle_old bundle; do
      for d in 0 0,1; do
        n=${prof}_${b}_${d/,/+}_$round
        rm -rf /tmp/t-$prof/reference; rm -f /tmp/t.db*
        t0=$(date +%s%N)
        EVO_BINARY=$PWD/$b/evo EVO_TRACE=$S/$n.trace.jsonl EVO_CACHE=/tmp/t-$prof $b/evo --db /tmp/t.db run --profile $prof \
          --strategy exhaustive --budget 1000 --devices $d --no-sanitize -q > $S/$n.txt 2>&1
        rc=$? ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        new=$(grep -oE '^run [0-9]+ [a-z]+ \([^)]*\): [0-9]+ new' $S/$n.txt | grep -oE '[0-9]+ new' | grep -oE '[0-9]+')
        log "$n: rc=$rc wall $ms ms, ${new:-0} new, $(awk -v n=${new:-0} -v ms=$ms 'BEGIN{printf "%.2f", 1000*n/ms}') ev/s; $(grep -E '^pipeline' $S/$n.txt | cut -c1-160)"
        $b/evo --db /tmp/t.db export-landscape 1 --to $S/landscape_$n.json > /dev/null 2>&1
      done
    done
    pack
  done
done
for prof in gemm_fp16 sdpa_fp8; do
  for d in 0 0+1; do
    log "$prof $d: new build's verdicts against the old build's (round 1): $(python3 scripts/compare-landscapes.py $S/landscape_${prof}_bundle_old_${d}_1.json $S/landscape_${prof}_bundle_${d}_1.json old new 2>&1 | tail -n 3 | paste -sd' ' | cut -c1-300)"
  done
done
pack
left=$(( 570 - ($(date +%s) - T0) ))
log "GPU tests with ${left} s left"
export EVO_BINARY=$PWD/bundle/evo
EVO_CACHE=/tmp/t-tests timeout $left bundle/evo_tests --gtest_filter='GpuCli.*:GpuGreenSafety.*:GpuPool.*:WorkerProtocol.*:GpuGates.Fault*:GpuGates.Hang*:GpuGates.Metrics*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
