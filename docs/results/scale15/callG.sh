#!/usr/bin/env bash
# Call G (sixteenth session, 1 x H200): call F's main job took 16.6 and 15.2 s (compile 197, 192 s; the
# run compile-bound, 16 workers busy 87-90 %) where call B's, on 131f3e9 and another H200 host, took
# 10.5 s (compile 124 s). The host, or the new default's proposals? Here, alternated on one host, the
# README's main job from an empty database and a cold cache with the rule before (-o stall=0, the same
# binary) and the new default, two of each. Predicted: the same within the spread (a quarter of the
# proposals after a stall move one knob of the best, configurations like the model's own, so compile
# seconds alike); the host decides. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/g.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
for i in 1 2; do for rule in before new; do
  opt=""; [ $rule = before ] && opt="-o stall=0"
  rm -rf /tmp/g-main; mkdir -p /tmp/g-main; t0=$(date +%s%N)
  (cd /tmp/g-main && EVO_CACHE=/tmp/g-main/cache timeout 100 $OLDPWD/bundle/evo run --budget 200 $opt > $S/main_${rule}_$i.txt 2>&1)
  log "main $rule $i: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^best|^time|^pipeline' $S/main_${rule}_$i.txt | sed -E 's/: MIN_BLOCKS.*\]//' | paste -sd' ' | cut -c1-520)"
  pack
done; done
log "done after $(( $(date +%s) - T0 )) s"; pack
