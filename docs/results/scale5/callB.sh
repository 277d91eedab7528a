#!/usr/bin/env bash
# Call B (the same 4-GPU machine, right after call A): Kernel Tuner's vector_add and convolution
# through evo.tune (3 input sets without an answer, now measured), vector_add with a right and a
# wrong answer; then issue 34's kernels as they are, exhaustive from a cold compile cache on every
# GPU to the end of each space: Kernel Tuner's convolution (17 x 17 filter in __constant__) and its
# matmul (about half its space faults).
# carry ["bundle.tar.xz", "kt-examples", "examples/kernel_tuner/kernels"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/b.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
R=docs/results/scale4
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

for n in vector_add convolution; do
  rm -rf kt-examples/$n/evo-*; t0=$(date +%s%N)
  EVO_TUNE_BUDGET=100 OUT=$PWD/kt-examples EVO_CACHE=/tmp/b-kt timeout 100 examples/kernel_tuner/python/run-kt-example.sh $n > $S/kt_$n.txt 2>&1
  log "evo.tune $n: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^time' $S/kt_$n.txt | paste -sd' ' | cut -c1-500)"
  grep -oE ": (green|compile|static|crash|timeout)[a-z_ ]*" $S/kt_$n.txt | sort | uniq -c | tee -a $S/log.txt
  for d in kt-examples/$n/evo-*; do
    cp -r $d $S/kt_${n}_folder; rm -f $S/kt_${n}_folder/data/*.npy
    bundle/evo --db $d/evo.db export-landscape 1 --to $S/kt_${n}_landscape.json > /dev/null 2>&1
  done
done
PYTHONPATH=$PWD/python EVO_CACHE=/tmp/b-kt timeout 60 python3 $R/vector_add_answer.py > $S/kt_answer.txt 2>&1
log "vector_add with an answer: rc=$? $(grep -E '^answer' $S/kt_answer.txt | paste -sd' ')"; pack

for k in "convolution 150" "matmul 240"; do
  set -- $k
  t0=$(date +%s%N)
  EVO_CACHE=/tmp/b-$1 timeout $(( $2 + 25 )) bundle/evo --db $S/$1.db run --profile examples/kernel_tuner/$1.json \
    --strategy exhaustive --budget 5000 --devices all --time-limit $2 > $S/$1.txt 2>&1
  log "$1: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time' $S/$1.txt | paste -sd' ' | cut -c1-600)"
  log "  $1 restart/crash lines: $(grep -ciE 'restart|crash' $S/$1.txt)"
  bundle/evo --db $S/$1.db export-landscape 1 --to $S/landscape_$1.json > /dev/null 2>&1
  bundle/evo --db $S/$1.db db check >> $S/log.txt 2>&1; pack
done
rm -f $S/*.db-*; log "done after $(( $(date +%s) - T0 )) s"; pack
