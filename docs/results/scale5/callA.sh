#!/usr/bin/env bash
# Call A (4 GPUs of one host): the GPU tests of this session's GPU paths; the exhaustive sweeps of
# sdpa_fp8 and gemm_fp16 on 1, 2 and 4 GPUs (scripts/gpu-devices.sh, GREEN's step times on the
# way); sdpa_fp8 on one GPU again with its long problem's six input sets (a profile copy), to see
# what the per-problem input sets save alone; the default strategy on one GPU with metrics by user
# replay and by kernel replay; the README's main job. Predictions: predictions.md.
# carry ["bundle.tar.xz"] (EVO_BUNDLE_BUILD=build scripts/bundle.sh && tar cJf bundle.tar.xz bundle).
set -u; export PYTHONUNBUFFERED=1
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/a.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"

EVO_CACHE=/tmp/a-tests timeout 140 bundle/evo_tests --gtest_filter='MetricGpu.*:GpuGates.Fp8Attention*:GpuGates.Metrics*:GpuGates.TwoLaunch*:GpuGates.Inout*:GpuReferenceStore.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of|Expected" $S/gpu_tests.txt | head -30 | tee -a $S/log.txt; pack

sweep() {  # name, timeout, profile, sets, env...
  local name=$1 t=$2 prof=$3 sets=$4; shift 4
  env "$@" OUT=$S/$name EVO_CACHE=/tmp/c-$prof timeout $t bash scripts/gpu-devices.sh $prof 1000 "$sets" > /dev/null 2>&1
  log "$name: rc=$?"
  grep -E "warm compile|devices|x one GPU|configs:|median ratio" $S/$name/session.log | cut -c1-500 | tee -a $S/log.txt; pack
}
sweep sdpa 150 sdpa_fp8 "0 0,1 all" EVO_GREEN_TIMES=$S/green_sdpa.jsonl
sweep gemm 120 gemm_fp16 "0 0,1 all"

# The long problem with the gate's 3 seeds x 2 trials, as before problems[].green (same binary).
python3 - <<'EOF'
import json
p = json.load(open('profiles/sdpa_fp8.json'))
for q in p['problems']: q.pop('green', None)
json.dump(p, open('profiles/sdpa_fp8_six.json', 'w'), indent=1)
EOF
rm -rf /tmp/c-sdpa_fp8/reference; t0=$(date +%s%N)
EVO_CACHE=/tmp/c-sdpa_fp8 EVO_GREEN_TIMES=$S/green_six.jsonl timeout 90 bundle/evo --db $S/six.db run \
  --profile profiles/sdpa_fp8_six.json --strategy exhaustive --budget 1000 --devices 0 --no-sanitize -q > $S/six.txt 2>&1
log "sdpa_fp8, long with six input sets, GPU 0: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run|^pipeline|^time' $S/six.txt | paste -sd' ' | cut -c1-500)"
bundle/evo --db $S/six.db export-landscape 1 --to $S/landscape_six.json > /dev/null 2>&1; pack

# Metrics: the default strategy (it reads them) on GPU 0, same seed, user replay then kernel replay.
for mode in user kernel; do
  t0=$(date +%s%N)
  EVO_METRICS_REPLAY=$mode EVO_CACHE=/tmp/c-sdpa_fp8 timeout 90 bundle/evo --db $S/m_$mode.db run --profile sdpa_fp8 \
    --budget 60 --seed 1 --devices 0 --no-sanitize -q > $S/m_$mode.txt 2>&1
  log "metrics by $mode replay, default strategy 60: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run|^pipeline|^time' $S/m_$mode.txt | paste -sd' ' | cut -c1-500)"
  bundle/evo --db $S/m_$mode.db export-landscape 1 --to $S/landscape_m_$mode.json > /dev/null 2>&1
done; pack

t0=$(date +%s%N)
EVO_CACHE=/tmp/a-main timeout 90 bundle/evo --db $S/main.db run --budget 200 > $S/main_job.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline|^time|profile ' $S/main_job.txt | paste -sd' ' | cut -c1-600)"
rm -f $S/*.db-* ; log done; pack
