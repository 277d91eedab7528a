#!/usr/bin/env bash
# call 2: the worker's own segfault of call 1 (SIGSEGV in "green: inputs" / "green: reference
# launch" of a profile's last trial): the worker now prints its call stack on a fatal signal.
set -u; S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c2.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
ev() {  # name, env..., -- args
  local name=$1; shift
  env "$@" > $S/$name.txt 2>&1
  log "$name rc=$? $(grep -m1 -E 'fatal signal|^status|crash|GREEN' $S/$name.txt | cut -c1-200)"; pack
}
P=tests/data/profiles/constant_weights.json
ev cold EVO_CACHE=/tmp/c2a timeout 120 bundle/evo --db $S/a.db eval $P --baseline --no-metrics
ev warm EVO_CACHE=/tmp/c2a timeout 120 bundle/evo --db $S/b.db eval $P --baseline --no-metrics
ev eager CUDA_MODULE_LOADING=EAGER EVO_CACHE=/tmp/c2a timeout 120 bundle/evo --db $S/c.db eval $P --baseline --no-metrics
ev blocking CUDA_LAUNCH_BLOCKING=1 EVO_CACHE=/tmp/c2a timeout 120 bundle/evo --db $S/d.db eval $P --baseline --no-metrics

grep -h -A40 "fatal signal" $S/cold.txt | head -80
