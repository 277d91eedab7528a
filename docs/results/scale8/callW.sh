#!/usr/bin/env bash
# Call W (`nvidia-h100-x1`: one H100), after the knob space enumerates without maps: the README's main job from an empty database and a cold
# compile cache, twice (the second with EVO_TRACE, to see where its seconds go, the end included),
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
rm -rf bundle; tar xJf bundle.tar.xz
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/w.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
main_job() {  # name, env...
  local name=$1; shift
  rm -rf /tmp/w-main-$name; t0=$(date +%s%N)
  env "$@" EVO_CACHE=/tmp/w-main-$name timeout 120 bundle/evo --db $S/$name.db run --budget 200 > $S/$name.txt 2>&1
  log "$name (evo run --budget 200, empty db, cold cache): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time' $S/$name.txt | paste -sd' ' | cut -c1-700)"
  rm -f $S/*.db-* $S/*.db; pack
}
main_job main1
main_job main2 EVO_TRACE=$S/main2.trace.jsonl
log "done after $(( $(date +%s) - T0 )) s"; pack
