#!/usr/bin/env bash
# Call S (one GPU, ninth session, after the review): transfer reads an existing database before the
# strategy is made, the store created after it; the setup hashed once per run. The GPU tests of
# `evo run` and every Gpu test of the worker and gates, and the same --objective run as call R.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/s.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | paste -sd';')"
EVO_CACHE=/tmp/s-tests timeout 420 bundle/evo_tests --gtest_filter='Gpu*:WorkerProtocol.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|AProblemResized" $S/gpu_tests.txt | head | tee -a $S/log.txt
pack
rm -rf /tmp/s-all; mkdir -p /tmp/s-all
(cd /tmp/s-all && EVO_CACHE=/tmp/s-all/cache timeout 240 $OLDPWD/bundle/evo run --objective mission,mission512,mission_causal --budget 16 --no-sanitize > $S/objective_all.txt 2>&1)
log "objective rc=$? $(grep -E 'transfer:|^run ' $S/objective_all.txt | paste -sd' ' | cut -c1-900)"
log "done after $(( $(date +%s) - T0 )) s"; pack
