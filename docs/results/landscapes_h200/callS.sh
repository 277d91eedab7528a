#!/usr/bin/env bash
# Call S (twenty-ninth session, 1 x H200, the only kind lent; carry ["bundle.tar.xz"], bundle with
# evo_tests at the new default: the first draws differ from each other in as many knobs as they can,
# initial_design=distinct). The tracked docs/results/**/raw_*.tar.xz are
# left out of the call's tree as for call R (git ls-files 'docs/results/*raw*' | xargs rm -f).
# Part 1: the README's main job from cold, then show-elites and export best. Part 2: every GPU test.
# Prediction: (1) 14-18 s, 200 new, 100 % valid; the best within 5 % of call R's 3.70 us (its profile,
# sdpa_fp8_wgmma: over 100 seeds on its H200 landscape the new default scores 0.807 against 0.862 and
# has 100 % within 2 % at 141 evaluations, as before, so the best after 200 should not move).
# (2) 132 run, 126 passed, 6 skipped, about 300 s (no GPU code changed).
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/s.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
export EVO_CACHE=/tmp/s-main; rm -rf $EVO_CACHE /tmp/s-main-run; mkdir -p /tmp/s-main-run
t=$(date +%s%N)
(cd /tmp/s-main-run && $OLDPWD/bundle/evo run --budget 200 > $S/main_run.txt 2>&1 &&
  $OLDPWD/bundle/evo show-elites > $S/main_elites.txt 2>&1 && $OLDPWD/bundle/evo export best --to kernels/ > $S/main_export.txt 2>&1); rc=$?
log "main job: rc=$rc wall=$(( ($(date +%s%N) - t) / 1000000 )) ms; $(grep -E '^run|^best|^time' $S/main_run.txt | tail -3 | paste -sd' ' | cut -c1-400)"
ls /tmp/s-main-run/kernels >> $S/main_export.txt 2>&1
pack
EVO_CACHE=/tmp/s-tests timeout 420 bash scripts/gpu-tests.sh bundle/evo_tests > $S/tests.txt 2>&1
log "gpu tests: rc=$? after $(( $(date +%s) - T0 )) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? from .* ran' $S/tests.txt | tail -n 12 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
