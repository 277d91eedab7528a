#!/usr/bin/env bash
# Call H (`nvidia-h100-x1`: one H100), the session's final code: the README's main job from an
# empty database and a cold compile cache, twice (the second traced); then the benchmark hub's
# convolution_milo T1 file with the default search, 60 evaluations from a cold cache: a space where
# a fifth of the configurations fail, so the Gaussian process leads its first climb on a real GPU.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
rm -rf bundle; tar xJf bundle.tar.xz
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/h.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
main_job() {  # name, env...
  local name=$1; shift
  rm -rf /tmp/h-main-$name; t0=$(date +%s%N)
  env "$@" EVO_CACHE=/tmp/h-main-$name timeout 120 bundle/evo --db $S/$name.db run --budget 200 > $S/$name.txt 2>&1
  log "$name (evo run --budget 200, empty db, cold cache): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time' $S/$name.txt | paste -sd' ' | cut -c1-700)"
  rm -f $S/*.db-* $S/*.db; pack
}
main_job main1
main_job main2 EVO_TRACE=$S/main2.trace.jsonl
t0=$(date +%s%N)
EVO_CACHE=/tmp/h-milo timeout 200 bundle/evo --db $S/milo.db run --profile tests/data/t1/convolution_milo.json --budget 60 > $S/milo.txt 2>&1
log "convolution_milo T1, default search, 60 evaluations, cold cache: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|GREEN|reference' $S/milo.txt | paste -sd' ' | cut -c1-900)"
bundle/evo --db $S/milo.db show-elites > $S/milo_elites.txt 2>&1
bundle/evo --db $S/milo.db runs > $S/milo_runs.txt 2>&1
EVO_CACHE=/tmp/h-milo bundle/evo --db $S/milo.db export best --to $S/milo_export > $S/milo_export.txt 2>&1
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); [print(*r) for r in c.execute('select origin_kind, origin_rule, status, count(*) from evaluations group by 1,2,3')]" $S/milo.db > $S/milo_origins.txt 2>&1
rm -f $S/*.db-*; pack
log "done after $(( $(date +%s) - T0 )) s"; pack
