#!/usr/bin/env bash
# Call T (thirtieth session, 1 x H200, the only kind lent; carry ["bundle.tar.xz"], bundle with
# evo_tests at 85f65f6: the search default unchanged since call S; a Pg test's kill made race-free,
# which the GPU tests do not run). The tracked docs/results/**/raw_*.tar.xz are
# left out of the call's tree as for call S (git ls-files 'docs/results/*raw*' | xargs rm -f).
# Part 1: the README's main job from cold, then show-elites and export best. Part 2: every GPU test.
# Prediction: (1) 14-18 s, 200 new, 100 % valid; the best within 5 % of call S's 3.72 us, the same
# configuration (nothing the search or the GPU path does changed since call S).
# (2) 132 run, 126 passed, 6 skipped, about 300 s, as call S.
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/t; mkdir -p $S; pack() { tar czf $OUT/t.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
export EVO_CACHE=/tmp/t-main; rm -rf $EVO_CACHE /tmp/t-main-run; mkdir -p /tmp/t-main-run
t=$(date +%s%N)
(cd /tmp/t-main-run && $OLDPWD/bundle/evo run --budget 200 > $S/main_run.txt 2>&1 &&
  $OLDPWD/bundle/evo show-elites > $S/main_elites.txt 2>&1 && $OLDPWD/bundle/evo export best --to kernels/ > $S/main_export.txt 2>&1); rc=$?
log "main job: rc=$rc wall=$(( ($(date +%s%N) - t) / 1000000 )) ms; $(grep -E '^run|^best|^time' $S/main_run.txt | tail -3 | paste -sd' ' | cut -c1-400)"
ls /tmp/t-main-run/kernels >> $S/main_export.txt 2>&1
pack
EVO_CACHE=/tmp/t-tests timeout 420 bash scripts/gpu-tests.sh bundle/evo_tests > $S/tests.txt 2>&1
log "gpu tests: rc=$? after $(( $(date +%s) - T0 )) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? from .* ran' $S/tests.txt | tail -n 12 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
