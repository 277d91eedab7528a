#!/usr/bin/env bash
# Call E (fifteenth session, 4 x H200, 64 cores): call D's default-strategy runs (Kernel Tuner's
# convolution, 68 evaluations, seeds 1-3, cold compile cache, --devices all) again with the pool's
# warm workers. In call D, without the pool, each GPU's first GREEN (1.0-1.5 s) and first metrics
# pass (0.9-4.0 s: a profiling worker started and CUPTI set up) were nearly all of the runs' GPU
# seconds (24.6 of 24.6 s is the bound there), and the wall was 1.27-1.64x that bound.
# Predicted: with the pool the GPU seconds fall to 3-8 s, the bound becomes the compile seconds / 64
# (2.4-2.8 s), and the wall 4-7 s, set by the longest recorded compile (one alone: 6.3-6.8 s), so
# still far from 1.1x of max(compile / cores, GPU): at 68 evaluations on 64 workers one compile is
# the critical path.
# carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/e.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/e-pool
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start.txt) ready"
for seed in 1 2 3; do
  t0=$(date +%s%N)
  EVO_POOL=1 EVO_CACHE=/tmp/e-conv$seed timeout 120 bundle/evo --db $S/conv$seed.db run --profile examples/kernel_tuner/convolution.json \
    --budget 68 --seed $seed --devices all > $S/conv$seed.txt 2>&1
  log "conv default seed $seed, pool: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|dropped' $S/conv$seed.txt | paste -sd' ' | cut -c1-700)"
  bundle/evo --db $S/conv$seed.db db check 2>&1 | tail -1 >> $S/log.txt; rm -rf /tmp/e-conv$seed; pack
done
bundle/evo pool stop >> $S/log.txt 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
