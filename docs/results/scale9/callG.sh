#!/usr/bin/env bash
# Call G (4 GPUs of one host): each per-GPU worker started seeing its own GPU alone
# (CUDA_VISIBLE_DEVICES=<its entry>, as its device 0), against EVO_WORKERS_SEE_ALL=1 (every worker
# sees every GPU, as before), alternated: issue 35's exhaustive sweeps of sdpa_fp8 and gemm_fp16 on
# 1, 2 and 4 GPUs (scripts/gpu-devices.sh: warm compile cache, reference store emptied before each
# run; SETS="0 0,1" on a 2-GPU host, as it ran: the 4-GPU kinds went back before it); then the GPU
# tests. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/g.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
for all in 0 1 1 0; do
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_all$all; [ -e $S/$n.trace.jsonl ] && n=${n}_b
    EVO_WORKERS_SEE_ALL=$all EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/g-$prof timeout 100 bash scripts/gpu-devices.sh $prof 1000 "${SETS:-0 0,1 all}" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing" $S/$n/session.log | sed -E 's/;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ ... \1/' | cut -c1-200 | paste -sd' ')"
    pack
  done
done
EVO_CACHE=/tmp/g-tests timeout ${TESTS_S:-330} bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GuardedDevice.*:GpuGates.*:GpuCli.*:MetricGpu.*:BuiltinCache*:WorkerProtocol.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|Expected|\[kill" $S/gpu_tests.txt | head -30 | tee -a $S/log.txt
grep -A2 "kill -9 a worker" $S/gpu_tests.txt | head -4 >> $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
