#!/usr/bin/env bash
# Call F (sixteenth session, 1 x H200): the new default search (2c96155: after eight results without
# a new best, a quarter of the proposals move one knob of the best to its least-proposed value) on the
# GPU, end to end. 1. The README's main job from an empty database and a cold cache, twice (call B on
# 131f3e9: 10.5 s, best 3.71 us, 1.57x). 2. The benchmark hub's convolution_milo T1 file as published,
# budget 100, from a cold cache (GREEN against the default configuration). Predicted: the main job
# 9-12 s and a best within 2 % of call B's (sdpa_fp8's landscape ties between the two rules: 0.897 both);
# convolution_milo passes GREEN and finds a configuration faster than the default. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/f.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
for i in 1 2; do
  rm -rf /tmp/f-main; mkdir -p /tmp/f-main; t0=$(date +%s%N)
  (cd /tmp/f-main && EVO_CACHE=/tmp/f-main/cache timeout 120 $OLDPWD/bundle/evo run --budget 200 > $S/main_$i.txt 2>&1)
  log "main $i: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run|^best|^time|^pipeline' $S/main_$i.txt | paste -sd' ' | cut -c1-700)"
  grep -c 'random:stall' $S/main_$i.txt >> $S/log.txt
  pack
done
t0=$(date +%s%N)
EVO_CACHE=/tmp/f-t1 timeout 300 bundle/evo --db $S/milo.db run --profile tests/data/t1/convolution_milo.json --budget 100 > $S/milo.txt 2>&1
log "convolution_milo: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run|^best|^time|^pipeline|reference' $S/milo.txt | paste -sd' ' | cut -c1-900)"
bundle/evo --db $S/milo.db show-elites > $S/milo_elites.txt 2>&1
head -12 $S/milo_elites.txt >> $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
