#!/usr/bin/env bash
# Call P (one GPU, ninth session): the landscapes of one kernel on every problem, for transfer
# between shapes (docs/results/search-transfer.md). sdpa_fp8's whole space (352 valid
# configurations) swept on each of its seven problems, one exhaustive run a problem, exported as
# landscapes; then a live run that transfers (mission512's sweep first, then mission with a budget of
# 8 in a database holding only mission512: its first proposals after the baseline come from it), and
# the GPU tests of `evo run`. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/p.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | paste -sd';')"
export EVO_CACHE=/tmp/p-cache
rm -f sweep.db*
timeout 420 bundle/evo --db sweep.db run --profile sdpa_fp8 --objective all --strategy exhaustive --budget 100000 \
  --no-sanitize -q > $S/sweep.txt 2>&1
log "sweep rc=$? $(grep -E '^run ' $S/sweep.txt | paste -sd' ' | cut -c1-600)"
bundle/evo --db sweep.db runs > $S/runs.txt 2>&1
for r in 1 2 3 4 5 6 7; do
  p=$(bundle/evo --db sweep.db runs 2>/dev/null | awk -v r=$r '$1==r {print $3}')
  bundle/evo --db sweep.db export-landscape $r --to $S/landscape_sdpa_fp8_${p}_h100.json >> $S/export.txt 2>&1
done
log "landscapes: $(ls $S | grep -c landscape_)"
log "after $(( $(date +%s) - T0 )) s"; pack
rm -f live.db*
bundle/evo --db live.db run --profile sdpa_fp8 --objective mission512,mission --budget 8 --seed 3 --no-sanitize > $S/live.txt 2>&1
log "live rc=$? $(grep -E 'transfer|^run |^best' $S/live.txt | paste -sd' ' | cut -c1-700)"
python3 - > $S/live_origins.txt 2>&1 <<'PY'
import sqlite3
c = sqlite3.connect("live.db")
for r in c.execute("SELECT run_id, problem, origin_kind, status, p50_us FROM evaluations ORDER BY id"):
    print(*r)
PY
log "live origins: $(awk '{print $1":"$3}' $S/live_origins.txt | paste -sd' ')"
EVO_CACHE=/tmp/p-tests timeout 300 bundle/evo_tests --gtest_filter='GpuCli.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure" $S/gpu_tests.txt | head | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
