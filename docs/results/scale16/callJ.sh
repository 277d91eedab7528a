#!/usr/bin/env bash
# Call J (seventeenth session, 4 x H200): the faster sdpa reference (templates/reference/sdpa_ref.cu:
# a warp a key's score, two threads a column of P·V; 80.6 -> 37.3 ms for every trial of sdpa_fp8 on
# an H200 by ref/ref_variants.py) against the one before, alternated in the protocol ("0 all",
# the pool, warm cache, reference store emptied before each run), three passes with EVO_TRACE; then
# every GPU test on this build, then the README's main job.
# Predicted: each GPU's first GREEN 0.04 s shorter (references_launch 0.081 -> 0.037 s); the 4-GPU
# wall 0.04 s shorter (of about 3.85 s), the 1-GPU wall the same 0.04 s shorter (of 14.4 s), so the
# ratio about 0.03x higher, inside the passes' spread (call I: 3.66-3.79x); every GPU test passes,
# SdpaRef's two new shapes with them. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/j.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/j-pool EVO_CACHE=/tmp/j-sdpa
REF=bundle/share/evo/templates/reference/sdpa_ref.cu; cp $REF /tmp/ref_new.cu; cp docs/results/scale16/ref/a_current.cu /tmp/ref_old.cu
bundle/evo pool start --devices all > $S/pool.txt 2>&1; log "pool: rc=$? $(grep -c ready $S/pool.txt) ready"
bundle/evo compile sdpa_fp8 --all > $S/compile.txt 2>&1; log "warm cache: $(tail -n 1 $S/compile.txt)"
for r in old new; do cp /tmp/ref_$r.cu $REF; rm -f /tmp/w.db*; EVO_POOL=1 bundle/evo --db /tmp/w.db run --profile sdpa_fp8 --strategy exhaustive --budget 4 --devices all --no-sanitize -q > $S/warm_$r.txt 2>&1; log "warm-up $r: rc=$?"; done
for pass in 1 2 3; do for r in old new; do cp /tmp/ref_$r.cu $REF; for d in 0 all; do
  left=$(( 300 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { log "pass $pass $r $d skipped"; continue; }
  n=p${pass}_${r}_$d; rm -f /tmp/$n.db*; rm -rf $EVO_CACHE/reference
  t=$(date +%s%N)
  EVO_POOL=1 EVO_TRACE=$S/$n.trace.jsonl EVO_GREEN_TIMES=$S/$n.green.jsonl timeout $left bundle/evo --db /tmp/$n.db run --profile sdpa_fp8 \
    --strategy exhaustive --budget 1000 --devices $d --no-sanitize -q > $S/$n.txt 2>&1
  rc=$? ms=$(( ($(date +%s%N) - t) / 1000000 ))
  bundle/evo --db /tmp/$n.db export-landscape 1 --to $S/$n.landscape.json > /dev/null 2>&1
  log "$n: rc=$rc wall=$ms ms $(grep -E '^run|^time' $S/$n.txt | paste -sd' ' | cut -c1-300)"
done; done; pack; done
cp /tmp/ref_new.cu $REF
bundle/evo pool stop >> $S/log.txt 2>&1
left=$(( 540 - ($(date +%s) - T0) ))
EVO_CACHE=/tmp/j-tests timeout $left bundle/evo_tests \
  --gtest_filter='Gpu*:GreenCompareOnDevice.*:MetricGpu*:BuiltinCache*:WorkerProtocol.*:Buffers.*:SdpaRef*:*OnDevice*:PoolWorker.*:PoolCli.*:CompilePool.*' \
  > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? after $(( $(date +%s) - T0 )) s: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
pack
left=$(( 590 - ($(date +%s) - T0) ))
if [ $left -gt 25 ]; then
  rm -rf /tmp/j-main; mkdir -p /tmp/j-main; t0=$(date +%s%N)
  (cd /tmp/j-main && EVO_CACHE=/tmp/j-main/cache timeout $left $OLDPWD/bundle/evo run --budget 200 > $S/main.txt 2>&1)
  log "main job: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run|^best|^time|^pipeline' $S/main.txt | paste -sd' ' | cut -c1-500)"
fi
log "done after $(( $(date +%s) - T0 )) s"; pack
