#!/usr/bin/env bash
# Call M (seventeenth session, 4 x H200): where sdpa_fp8 on two GPUs loses against one (call L: 1.87-1.91x), on a
# timeline: the protocol ("0 0,1", the pool, a warm compile cache, the reference store emptied
# before each run), three passes, each run with EVO_TRACE and EVO_GREEN_TIMES.
# Predicted: the 2-GPU GREEN sum 0.3-0.5 s above one GPU's (call L), in each GPU's first candidate or spread over the run; the traces say which.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/m.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/m-pool EVO_CACHE=/tmp/m-sdpa
bundle/evo pool start --devices all > $S/pool.txt 2>&1; log "pool: rc=$? $(grep -c ready $S/pool.txt) ready"
t=$(date +%s%N); bundle/evo compile sdpa_fp8 --all > $S/compile.txt 2>&1; log "warm cache: $(( ($(date +%s%N) - t) / 1000000 )) ms, $(tail -n 1 $S/compile.txt)"
for pass in 1 2 3; do for d in 0 0,1; do
  left=$(( 420 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { log "pass $pass $d skipped"; continue; }
  n=p${pass}_${d/,/_}; rm -f $S/$n.db*; rm -rf $EVO_CACHE/reference
  t=$(date +%s%N)
  EVO_POOL=1 EVO_TRACE=$S/$n.trace.jsonl EVO_GREEN_TIMES=$S/$n.green.jsonl timeout $left bundle/evo --db $S/$n.db run --profile sdpa_fp8 \
    --strategy exhaustive --budget 1000 --devices $d --no-sanitize -q > $S/$n.txt 2>&1
  rc=$? ms=$(( ($(date +%s%N) - t) / 1000000 ))
  log "$n: rc=$rc wall=$ms ms load $(cut -d' ' -f1 /proc/loadavg) $(grep -E '^run|^time|^pipeline' $S/$n.txt | paste -sd' ' | cut -c1-400)"
  pack
done; done
bundle/evo pool stop >> $S/log.txt 2>&1
rm -f $S/*.db*
log "done after $(( $(date +%s) - T0 )) s"; pack
