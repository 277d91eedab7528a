#!/usr/bin/env bash
# Call S (fourteenth session, one H200, right after call R): Kernel Tuner's convolution as it is,
# exhaustive from a cold compile cache on one GPU and 16 cores, in lexicographic order and in the
# scheduled order (Johnson's rule from two forests, section 8 of docs/results/pipeline.md), one after
# the other, then the scheduled order again. Before: 1.15x the bound on an H100's host (16 cores),
# 1.22x lexicographic and 1.03-1.17x scheduled in replays of 64 workers.
# carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/s.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
for k in lexicographic schedule schedule2; do
  left=$(( 570 - ($(date +%s) - T0) )); [ $left -lt 150 ] && { log "$k: skipped, ${left} s left"; continue; }
  t0=$(date +%s%N)
  EVO_CACHE=/tmp/s-$k timeout $left bundle/evo --db $S/$k.db run --profile examples/kernel_tuner/convolution.json \
    --strategy exhaustive -o order=${k%2} --budget 5000 --devices 0 > $S/$k.txt 2>&1
  log "$k: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time' $S/$k.txt | paste -sd' ' | cut -c1-700)"
  bundle/evo --db $S/$k.db db check 2>&1 | tail -1 >> $S/log.txt; rm -rf /tmp/s-$k; pack
done
log "done after $(( $(date +%s) - T0 )) s"; pack
