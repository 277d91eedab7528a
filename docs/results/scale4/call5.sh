#!/usr/bin/env bash
# Call 5 (4 GPUs of one host; issue 34's own case): Kernel Tuner's convolution and matmul examples as
# they are (their faulting and out-of-bounds configurations included), exhaustive from a cold
# compile cache on every GPU, to the end of each space. Afterwards (here): the verdicts by kind, the
# GREEN failures' messages, and matmul's verdicts against its recorded H100 landscape.
# carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"].
set -u; export PYTHONUNBUFFERED=1
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c5.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
for k in "convolution 150" "matmul 120"; do
  set -- $k
  t0=$(date +%s%N)
  EVO_CACHE=/tmp/c5-$1 timeout $(( $2 + 25 )) bundle/evo --db $S/$1.db run --profile examples/kernel_tuner/$1.json \
    --strategy exhaustive --budget 5000 --devices all --time-limit $2 > $S/$1.txt 2>&1
  log "$1: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time' $S/$1.txt | paste -sd' ' | cut -c1-600)"
  log "  $1 restarts/crash lines: $(grep -ciE 'restart|crash' $S/$1.txt)"
  bundle/evo --db $S/$1.db export-landscape 1 --to $S/landscape_$1.json > /dev/null 2>&1
  bundle/evo --db $S/$1.db db check >> $S/log.txt 2>&1; pack
done
log done; pack
