#!/usr/bin/env bash
# Call R (one GPU, ninth session): the GPU tests of `evo run` after transfer learned to start from
# the problem as the profile was before it changed (GpuCli.AProblemResizedIsMeasuredAgainNotReadBack:
# its resized run with the default strategy proposes two transferred configurations first), and
# `evo run --objective all` of the default profile with a small budget, transfer as it comes.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/r.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | paste -sd';')"
EVO_CACHE=/tmp/r-tests timeout 300 bundle/evo_tests --gtest_filter='GpuCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|AProblemResized" $S/gpu_tests.txt | head | tee -a $S/log.txt
pack
rm -rf /tmp/r-all; mkdir -p /tmp/r-all
(cd /tmp/r-all && EVO_CACHE=/tmp/r-all/cache timeout 240 $OLDPWD/bundle/evo run --objective mission,mission512,mission_causal --budget 16 --no-sanitize > $S/objective_all.txt 2>&1)
log "objective rc=$? $(grep -E 'transfer:|^run ' $S/objective_all.txt | paste -sd' ' | cut -c1-900)"
log "done after $(( $(date +%s) - T0 )) s"; pack
