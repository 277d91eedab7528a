#!/usr/bin/env bash
# Call F (fifteenth session, 4 x H200, 64 cores): where the first 2.5-3.9 s of call E's runs go before
# the first result (the baseline's compile took 0.56 s): call E's seed 2 again with the pool, traced
# (EVO_TRACE), and once more from a warm compile cache.
# carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/f.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
export EVO_POOL_DIR=/tmp/f-pool
bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
for k in cold warm; do
  t0=$(date +%s%N)
  EVO_POOL=1 EVO_TRACE=$S/$k.trace.jsonl EVO_GREEN_TIMES=$S/$k.green.jsonl EVO_CACHE=/tmp/f-conv timeout 120 bundle/evo --db $S/$k.db run \
    --profile examples/kernel_tuner/convolution.json --budget 68 --seed 2 --devices all > $S/$k.txt 2>&1
  log "$k: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time|^pipeline' $S/$k.txt | paste -sd' ' | cut -c1-500)"
  pack
done
bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
