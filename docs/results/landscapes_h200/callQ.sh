#!/usr/bin/env bash
# Call Q (twenty-seventh session, 1 x H200, the only kind lent; carry ["bundle.tar.xz"], bundle with
# evo_tests at the new default: a stall's repaired jumps stop after four in a row that bring no new
# best, repair_tries=4).
# Part 1: every GPU test (scripts/gpu-tests.sh). Part 2: the README's main job from cold, then
# show-elites and export best.
# Prediction: (1) 132 run, 126 passed, 6 skipped (call L's figures; no GPU code changed since), about
# 280 s. (2) about 14-17 s, 200 new, best within 5 % of call L's 3.70 us, the export written. The
# main job's profile (sdpa_fp8_wgmma on sm_90) has no switch whose other value breaks a constraint
# alone, so the new rule should not move it.
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/q; mkdir -p $S; pack() { tar czf $OUT/q.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
EVO_CACHE=/tmp/q-tests timeout 420 bash scripts/gpu-tests.sh bundle/evo_tests > $S/tests.txt 2>&1
log "gpu tests: rc=$? after $(( $(date +%s) - T0 )) s"
grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? from .* ran' $S/tests.txt | tail -n 12 | tee -a $S/log.txt
pack
export EVO_CACHE=/tmp/q-main; rm -rf $EVO_CACHE /tmp/q-main-run; mkdir -p /tmp/q-main-run
t=$(date +%s%N)
(cd /tmp/q-main-run && $OLDPWD/bundle/evo run --budget 200 > $S/main_run.txt 2>&1 &&
  $OLDPWD/bundle/evo show-elites > $S/main_elites.txt 2>&1 && $OLDPWD/bundle/evo export best --to kernels/ > $S/main_export.txt 2>&1); rc=$?
log "main job: rc=$rc wall=$(( ($(date +%s%N) - t) / 1000000 )) ms; $(grep -E '^run|^best|^time' $S/main_run.txt | tail -3 | paste -sd' ' | cut -c1-400)"
ls /tmp/q-main-run/kernels >> $S/main_export.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
