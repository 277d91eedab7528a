#!/usr/bin/env bash
# Call A (nineteenth session, 2 x H200; the 4-GPU kinds were not lent): every GPU test on the build
# of 286e996 (scripts/gpu-tests.sh), above all those the last session did not reach on a20b53c's
# GREEN memoizations: GpuTensorMap.* (PackReusesAMapOnlyWhileItsLayoutHolds never ran on a GPU),
# TmaCopy.*, GuardedDevice.*, the metric suites, Shapes/SdpaRef.*, PoolWorker/PoolCli, GpuPool (the
# pool not disabled this time). Then the README's main job from cold (empty database, empty cache,
# no pool), then sdpa_fp8's protocol on "0 0,1", three turns, the pool, as time allows.
# Predicted: every GPU test passes but the six that need a machine without a GPU (129 run, 123
# passed, 6 skipped, as call C of scale17); main job 11-15 s (scale17 call D on 16 cores: 13.5,
# 12.4 s; this host has 32 cores, so its compiles finish sooner: 8-12 s); sdpa_fp8 on two GPUs
# 1.95-2.05x one (scale17 calls B, C: 2.00x, 2.01x; GREEN's memoizations help both sides alike).
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/a.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
EVO_CACHE=/tmp/a-tests timeout 330 bash scripts/gpu-tests.sh bundle/evo_tests > $S/gpu_tests.txt 2>&1
log "gpu tests: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? from .* ran' $S/gpu_tests.txt | paste -sd' ' | cut -c1-300)"
grep -E '^\[  FAILED  \]' $S/gpu_tests.txt | head -20 | tee -a $S/log.txt
pack
export EVO_CACHE=/tmp/a-main; rm -rf $EVO_CACHE /tmp/a-main-run; mkdir -p /tmp/a-main-run
t=$(date +%s%N)
(cd /tmp/a-main-run && $OLDPWD/bundle/evo run --budget 200 > $S/main_run.txt 2>&1); rc=$?
ms=$(( ($(date +%s%N) - t) / 1000000 ))
log "main job: rc=$rc wall=$ms ms; $(grep -E '^run|^time|^pipeline|best' $S/main_run.txt | tail -4 | paste -sd' ' | cut -c1-400)"
(cd /tmp/a-main-run && $OLDPWD/bundle/evo show-elites > $S/elites.txt 2>&1 && $OLDPWD/bundle/evo export best --to kernels/ > $S/export.txt 2>&1); log "show-elites, export: rc=$? $(ls /tmp/a-main-run/kernels | paste -sd' ')"
pack
left=$(( 570 - ($(date +%s) - T0) ))
log "sdpa_fp8 protocol, $left s left"
export EVO_POOL_DIR=/tmp/a-pool
bundle/evo pool start --devices all > $S/pool.txt 2>&1; log "pool: rc=$? $(grep -c ready $S/pool.txt) ready"
EVO_POOL=1 OUT=$S/sdpa_fp8 EVO_CACHE=/tmp/a-sdpa_fp8 timeout $left bash scripts/gpu-devices.sh sdpa_fp8 1000 "0 0,1" 3 > /dev/null 2>&1
log "sdpa_fp8: rc=$?"; grep -E "evaluations/s|verdicts differing" $S/sdpa_fp8/session.log | sed -E 's/; run [0-9]+ .*//' | cut -c1-200 | tee -a $S/log.txt
rm -f $S/sdpa_fp8/landscape_*_[23].json
log "done after $(( $(date +%s) - T0 )) s"; pack
