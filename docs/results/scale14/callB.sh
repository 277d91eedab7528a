#!/usr/bin/env bash
# Call B (fifteenth session, 2 x H200): the issue's protocol on the final build, 4d2b861 (each GPU's
# next candidate queued, the fills proved against their checksum): scripts/gpu-devices.sh with the pool, gemm_fp16 and sdpa_fp8 on 1 and 2
# GPUs, twice (call U on 6b3cf03, 2 x H200: 1.97-1.98x gemm_fp16, 1.92-1.97x sdpa_fp8); traced, with
# GREEN's steps (EVO_GREEN_TIMES). Then the GPU tests that want two GPUs: the CLI's (a per-GPU worker
# killed mid-candidate with --devices all among them), GREEN's safety on every device, the pool.
# Predicted: gemm_fp16 1.95-2.00x, sdpa_fp8 1.92-1.98x, verdicts identical; the tests pass.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/b.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_POOL_DIR=/tmp/b-pool
t0=$(date +%s%N); bundle/evo pool start --devices all > $S/pool_start.txt 2>&1
log "pool start: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -c ready $S/pool_start.txt) ready"
for pass in pool pool2; do
  for prof in gemm_fp16 sdpa_fp8; do
    n=${prof}_$pass
    EVO_POOL=1 EVO_GREEN_TIMES=$S/$n.green.jsonl EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/b-$prof \
      timeout 150 bash scripts/gpu-devices.sh $prof 1000 "0 0,1" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*//' | cut -c1-160 | paste -sd' ')"
    pack
  done
done
bundle/evo pool stop >> $S/log.txt 2>&1
left=$(( 570 - ($(date +%s) - T0) ))
log "GPU tests with ${left} s left"
EVO_CACHE=/tmp/b-tests timeout $left bundle/evo_tests --gtest_filter='GpuCli.*:GpuGreenSafety.*:GpuPool.*:WorkerProtocol.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
