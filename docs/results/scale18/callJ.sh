#!/usr/bin/env bash
# Call J (nineteenth session, 1 x H200, 16 cores, like the H100 host): the README's main job on the final build, cold (empty
# database, empty compile cache, no pool): evo run --budget 200, show-elites, export best.
# Predicted: 11-14 s (scale17 call D, the same kind of host: 13.5 and 12.4 s, compile-bound on 16
# cores; nothing since changes the compile side).
# carry ["bundle.tar.xz"].
set -u
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores"
export LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
for pass in 1 2; do
  export EVO_CACHE=/tmp/j-cache-$pass; rm -rf $EVO_CACHE /tmp/j-$pass; mkdir -p /tmp/j-$pass
  t=$(date +%s%N)
  (cd /tmp/j-$pass && $OLDPWD/bundle/evo run --budget 200 > $S/run_$pass.txt 2>&1); rc=$?
  ms=$(( ($(date +%s%N) - t) / 1000000 ))
  log "main job pass $pass: rc=$rc wall=$ms ms; $(grep -E '^run|^time|^pipeline|best' $S/run_$pass.txt | tail -4 | paste -sd' ' | cut -c1-400)"
  (cd /tmp/j-$pass && $OLDPWD/bundle/evo show-elites > $S/elites_$pass.txt 2>&1 && $OLDPWD/bundle/evo export best --to kernels/ > $S/export_$pass.txt 2>&1); log "show-elites, export: rc=$? $(ls /tmp/j-$pass/kernels | paste -sd' ')"
done
head -12 $S/elites_1.txt | tee -a $S/log.txt
tar czf $OUT/j.tgz -C $S .
