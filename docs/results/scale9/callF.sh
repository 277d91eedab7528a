#!/usr/bin/env bash
# Call F (4 GPUs of one host, asked as nvidia-h100-x4, lent again late in the session): the
# session's final code (nothing a worker does changed since scale8's call V): issue 35's exhaustive
# sweeps of sdpa_fp8 and gemm_fp16 on 1, 2 and 4 GPUs, twice in opposite orders
# (scripts/gpu-devices.sh: warm compile cache, reference store emptied before each run), every run
# traced. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/f.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
for i in 1 2; do
  sets="0 0,1 all"; [ $i = 2 ] && sets="all 0,1 0"
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_$i
    EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/f-$prof timeout 150 bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
    log "$n ($sets): rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median ratio" $S/$n/session.log | sed -E 's/;.*wall ([0-9.]+ s after)/ ... wall \1/; s/, the first result.*//' | cut -c1-260 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|metrics of the best|workers started" | cut -c1-160 >> $S/log.txt
    pack
  done
done
log "done after $(( $(date +%s) - T0 )) s"; pack
