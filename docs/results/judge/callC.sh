#!/usr/bin/env bash
# call C (4 x H100, GPU 0 for one GPU's figures), after call A found the integrity kernel reading a
# guard zone that starts at a buffer's unaligned end (misaligned address: every buffer whose size is
# not a multiple of 8 crashed its candidate) and the guard zones hiding a read past the end from
# compute-sanitizer. Both mended; then:
#  1. the GPU tests this change touches
#  2. a real kernel with faulting configurations: Kernel Tuner's matmul as it is, its
#     block_size_x = 16 slice (90 configurations, about 30 fault on the H100), exhaustive from a cold
#     cache, then the slice without the ones that faulted (exclude_faults.py); verdicts compared
#  3. GREEN's time a candidate, before (bundle/evo_before: HEAD's GREEN with step times) and after,
#     the first 60 configurations of sdpa_fp8 in exhaustive order, warm compile cache
#  4. scaling: sdpa_fp8 exhaustive on 1, 2, 4 GPUs and gemm_fp16 on 1 and 4 (scripts/gpu-devices.sh)
set -u; export PYTHONUNBUFFERED=1
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
R=docs/results/judge
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
EVO_CACHE=/tmp/c-tests timeout 230 bundle/evo_tests \
  --gtest_filter='GuardedDevice*:GreenCompareOnDevice*:GpuGreenSafety*:GpuCli.AWorkerKilled*:GpuGates.*:-GpuGates.Fa3*' \
  > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Which is|Value of|: crash|GREEN" $S/gpu_tests.txt | head -12; pack
python3 - <<'PY'
import json
p = json.load(open("examples/kernel_tuner/matmul.json"))
p["knobs"]["block_size_x"] = [16]
p["baseline"]["block_size_x"] = 16
p["baseline"]["block_size_y"] = 4
p["description"] += "; its block_size_x = 16 slice"
json.dump(p, open("examples/kernel_tuner/matmul16.json", "w"), indent=1)
PY
mm() {  # name, profile, cache
  local t0=$(date +%s%N)
  EVO_CACHE=$3 timeout 150 bundle/evo --db $S/$1.db run --profile $2 --strategy exhaustive --budget 1000 --devices 0 \
    --no-sanitize > $S/$1.txt 2>&1
  log "$1: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline' $S/$1.txt | paste -sd' ')"
  bundle/evo --db $S/$1.db export-landscape 1 --to $S/$1.json > /dev/null 2>&1
}
mm mm_faults examples/kernel_tuner/matmul16.json /tmp/c-mm
python3 $R/exclude_faults.py make examples/kernel_tuner/matmul16.json $S/mm_faults.json examples/kernel_tuner/matmul16_nofaults.json | tee -a $S/log.txt
mm mm_nofaults examples/kernel_tuner/matmul16_nofaults.json /tmp/c-mm2
python3 $R/exclude_faults.py compare $S/mm_faults.json $S/mm_nofaults.json | tee -a $S/log.txt; pack
EVO_CACHE=/tmp/b-sdpa_fp8 timeout 100 bundle/evo compile sdpa_fp8 --all > $S/sdpa_compile.txt 2>&1
log "sdpa_fp8 compile --all: $(tail -1 $S/sdpa_compile.txt)"
for b in evo_before evo; do
  rm -rf /tmp/b-sdpa_fp8/reference
  t0=$(date +%s%N)
  EVO_CACHE=/tmp/b-sdpa_fp8 EVO_GREEN_TIMES=$S/green_$b.jsonl timeout 100 bundle/$b --db $S/sdpa_$b.db run --profile sdpa_fp8 \
    --strategy exhaustive --budget 60 --devices 0 --no-sanitize > $S/sdpa_$b.txt 2>&1
  log "sdpa_fp8 60 ($b): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time|^pipeline' $S/sdpa_$b.txt | paste -sd' ')"
  bundle/evo --db $S/sdpa_$b.db export-landscape 1 --to $S/sdpa_$b.json > /dev/null 2>&1
done
python3 $R/green_times.py $S/green_evo_before.jsonl $S/green_evo.jsonl $S/sdpa_evo_before.json $S/sdpa_evo.json | tee -a $S/log.txt
pack
OUT=$S/scale_sdpa_fp8 EVO_CACHE=/tmp/b-sdpa_fp8 timeout 150 bash scripts/gpu-devices.sh sdpa_fp8 1000 "0 0,1 all" > /dev/null 2>&1
grep -E "devices|x one GPU|configs:|median ratio" $S/scale_sdpa_fp8/session.log | cut -c1-300 | tee -a $S/log.txt; pack
OUT=$S/scale_gemm_fp16 EVO_CACHE=/tmp/b-gemm_fp16 timeout 120 bash scripts/gpu-devices.sh gemm_fp16 1000 "0 all" > /dev/null 2>&1
grep -E "devices|x one GPU|configs:|median ratio" $S/scale_gemm_fp16/session.log | cut -c1-300 | tee -a $S/log.txt; pack
