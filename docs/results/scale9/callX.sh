#!/usr/bin/env bash
# Call X (2 GPUs of one host; the 4-GPU kinds were not lent this session): issue 35's exhaustive
# sweeps of sdpa_fp8 and gemm_fp16 on 1 and 2 GPUs, twice in opposite orders (scripts/gpu-devices.sh:
# warm compile cache, reference store emptied before each run); two `evo worker --queue` over a
# PostgreSQL server carried here against `--devices 0,1` (scripts/gpu-queue.sh); the README's main
# job on one GPU from an empty database and a cold cache, twice, with the session's new default
# search (the Gaussian process leads the first climb where configurations fail). PART=tests: the
# GPU tests. carry ["bundle.tar.xz", "pgdist.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/x_${PART:-sweeps}.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"

sweep() {  # name, timeout, profile, sets
  local name=$1 t=$2 prof=$3 sets=$4
  EVO_GREEN_TIMES=$S/$name.green.jsonl EVO_TRACE=$S/$name.trace.jsonl \
    OUT=$S/$name EVO_CACHE=/tmp/x-$prof timeout $t bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
  log "$name: rc=$?"
  grep -E "warm compile|devices|x one GPU|configs:|median ratio" $S/$name/session.log | cut -c1-760 | tee -a $S/log.txt
  pack
}
if [ "${PART:-sweeps}" = sweeps ]; then
sweep sdpa 200 sdpa_fp8 "0 0,1"
sweep gemm 150 gemm_fp16 "0 0,1"
sweep sdpa2 120 sdpa_fp8 "0,1 0"
sweep gemm2 100 gemm_fp16 "0,1 0"

OUT=$S/queue EVO_CACHE=/tmp/x-sdpa_fp8 timeout 170 bash scripts/gpu-queue.sh sdpa_fp8 1000 > /dev/null 2>&1
log "queue: rc=$?"; grep -E "devices 0,1|queue|worker|verdict|median" $S/queue/session.log | cut -c1-900 | tee -a $S/log.txt
rm -f q_*.db*; pack

for i in 1 2; do
  t0=$(date +%s%N)
  CUDA_VISIBLE_DEVICES=0 EVO_CACHE=/tmp/x-main$i timeout 100 bundle/evo --db $S/main$i.db run --budget 200 > $S/main_job$i.txt 2>&1
  log "main job $i (evo run --budget 200, one GPU, empty db, cold cache): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|profile ' $S/main_job$i.txt | paste -sd' ' | cut -c1-700)"
  bundle/evo --db $S/main$i.db show-elites > $S/main_elites$i.txt 2>&1
done
rm -f $S/*.db-* $S/*.db; pack
log "done after $(( $(date +%s) - T0 )) s"; pack; exit 0
fi

EVO_CACHE=/tmp/x-tests timeout ${TESTS_S:-420} bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GuardedDevice.*:GpuGates.*:GpuCli.*:MetricGpu.*:BuiltinCache*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|Expected|\[kill" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
