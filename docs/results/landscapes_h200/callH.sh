#!/usr/bin/env bash
# Call H (twenty-second session, 1 x H200, the only kind lent; carry ["bundle.tar.xz"], bundle built
# with evo_tests at the session's search change).
#   1. Every GPU test (scripts/gpu-tests.sh): the first run of GPU code after cd9dad0 renamed the
#      buffer sets' bound (kKeptBufferSetsFloor/Share; the same values), compiled only until now.
#   2. The README's main job from cold (empty database, empty compile cache, no pool) with the new
#      default search (cap_ratio 4: the time forest's targets capped at 4x the best): it runs live as it runs in replay.
# Prediction: (1) 132 run, 126 passed, 6 skipped (the six that need a machine without a GPU), in
# about 250-330 s (call D: 132 tests; the kept-fills test passed in call F's form). (2) about 17 s
# (call F: 17.2 s on this kind), 200 new evaluations, best within 5 % of call F's 3.75 us (a 200-
# evaluation run on sdpa_fp8's 352 valid configurations reaches its best in replay in 100 % of seeds).
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/h.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
EVO_CACHE=/tmp/h-tests timeout 400 bash scripts/gpu-tests.sh bundle/evo_tests > $S/tests.txt 2>&1
log "gpu tests: rc=$? after $(( $(date +%s) - T0 )) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? from .* ran' $S/tests.txt | tail -n 12 | tee -a $S/log.txt
pack
export EVO_CACHE=/tmp/h-main; rm -rf $EVO_CACHE /tmp/h-main-run; mkdir -p /tmp/h-main-run
t=$(date +%s%N)
(cd /tmp/h-main-run && $OLDPWD/bundle/evo run --budget 200 > $S/main_run.txt 2>&1); rc=$?
log "main job: rc=$rc wall=$(( ($(date +%s%N) - t) / 1000000 )) ms; $(grep -E '^run|^best|^time' $S/main_run.txt | tail -3 | paste -sd' ' | cut -c1-400)"
(cd /tmp/h-main-run && $OLDPWD/bundle/evo show-elites > $S/elites.txt 2>&1 && $OLDPWD/bundle/evo export best --to kernels/ > $S/export.txt 2>&1); log "show-elites, export: rc=$? $(ls /tmp/h-main-run/kernels | paste -sd' ')"
log "done after $(( $(date +%s) - T0 )) s"; pack
