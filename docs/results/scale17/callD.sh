#!/usr/bin/env bash
# Call D (eighteenth session, 1 x H200): the README's main job on this session's build, cold (empty
# database, empty compile cache, no pool): evo run --budget 200, show-elites, export best.
# Predicted: 8-11 s (scale15: 8.0-8.5 s on 4 x H200's host; scale16 call J 10.5 s), the run's two
# profile reads now at the workers' warm probes (about 20 ms sooner at the start).
# carry ["bundle.tar.xz"].
set -u
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores"
export LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
for pass in 1 2; do
  export EVO_CACHE=/tmp/d-cache-$pass; rm -rf $EVO_CACHE /tmp/d-$pass; mkdir -p /tmp/d-$pass
  t=$(date +%s%N)
  (cd /tmp/d-$pass && $OLDPWD/bundle/evo run --budget 200 > $S/run_$pass.txt 2>&1); rc=$?
  ms=$(( ($(date +%s%N) - t) / 1000000 ))
  log "main job pass $pass: rc=$rc wall=$ms ms; $(grep -E '^run|^time|^pipeline|best' $S/run_$pass.txt | tail -4 | paste -sd' ' | cut -c1-400)"
  (cd /tmp/d-$pass && $OLDPWD/bundle/evo show-elites > $S/elites_$pass.txt 2>&1 && $OLDPWD/bundle/evo export best --to kernels/ > $S/export_$pass.txt 2>&1); log "show-elites, export: rc=$? $(ls /tmp/d-$pass/kernels | paste -sd' ')"
done
head -12 $S/elites_1.txt | tee -a $S/log.txt
tar czf $OUT/d.tgz -C $S .
