#!/usr/bin/env bash
# Call E (one H100, `nvidia-h100-x1`): Kernel Tuner's vector_add and convolution examples through
# evo.tune (issue 37 asks for them on an H100; every earlier evo.tune call ran on H200s), vector_add
# with a right and a wrong answer, then the README's main job on a one-GPU host (16 cores).
# carry ["bundle.tar.xz", "kt-examples", "examples/kernel_tuner/kernels"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/e.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
R=docs/results/scale4
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

for n in vector_add convolution; do
  rm -rf kt-examples/$n/evo-*; t0=$(date +%s%N)
  EVO_TUNE_BUDGET=100 OUT=$PWD/kt-examples EVO_CACHE=/tmp/e-kt timeout 120 examples/kernel_tuner/python/run-kt-example.sh $n > $S/kt_$n.txt 2>&1
  log "evo.tune $n: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^time' $S/kt_$n.txt | paste -sd' ' | cut -c1-500)"
  grep -oE ": (green|compile|static|crash|timeout)[a-z_ ]*" $S/kt_$n.txt | sort | uniq -c | tee -a $S/log.txt
  for d in kt-examples/$n/evo-*; do
    cp -r $d $S/kt_${n}_folder; rm -f $S/kt_${n}_folder/data/*.npy
    bundle/evo --db $d/evo.db export-landscape 1 --to $S/kt_${n}_landscape.json > /dev/null 2>&1
    bundle/evo --db $d/evo.db show-elites > $S/kt_${n}_elites.txt 2>&1
  done
done
PYTHONPATH=$PWD/python EVO_CACHE=/tmp/e-kt timeout 90 python3 $R/vector_add_answer.py > $S/kt_answer.txt 2>&1
log "vector_add with an answer: rc=$? $(grep -E '^answer' $S/kt_answer.txt | paste -sd' ')"; pack

t0=$(date +%s%N)
EVO_CACHE=/tmp/e-main timeout 120 bundle/evo --db $S/main.db run --budget 200 > $S/main_job.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache, one H100): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|profile ' $S/main_job.txt | paste -sd' ' | cut -c1-700)"
rm -f $S/*.db-* $S/*.db; log "done after $(( $(date +%s) - T0 )) s"; pack
