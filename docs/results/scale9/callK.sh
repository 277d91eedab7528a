#!/usr/bin/env bash
# Call K (one GPU, eighth session): the integer and f64 dtypes and the T1 argument types they serve
# (uint8 ... uint64, int8 ... int64, bool, double, half/float/double vectors, Symbol arguments):
# GREEN's comparison kernel against the host for each new dtype, a T1 file of every such argument
# through GREEN and FAST, `evo run` on it, and the GPU tests that read poison and compare outputs.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/k.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | paste -sd';')"
rm -f t.db*; EVO_CACHE=/tmp/k-cache timeout 120 bundle/evo --db t.db run --profile tests/data/t1/small_types.json --budget 11 > $S/run_types.txt 2>&1
log "evo run small_types.json: rc=$? $(grep -E '^run|^best|memcheck' $S/run_types.txt | paste -sd' ' | cut -c1-300)"
timeout 30 bundle/evo --db t.db show-elites > $S/elites_types.txt 2>&1; log "show-elites rc=$?"
EVO_CACHE=/tmp/k-tests timeout ${TESTS_S:-420} bundle/evo_tests --gtest_filter='GreenCompareOnDevice.*:GpuGates.*:Buffers.*:GpuGreenSafety.*:GpuReferenceStore.*:GpuCli.EvalPrints*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|Expected|\[t1 types\]" $S/gpu_tests.txt | head -30 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
