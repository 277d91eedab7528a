#!/usr/bin/env bash
# call A (a 4-GPU machine; GPU 0 for what is one GPU's): the judge after the fix.
#  1. the GPU tests this change touches (GREEN's safety, guard zones, a worker killed mid-candidate,
#     every gate, the reference store)
#  2. a real kernel with faulting configurations (Kernel Tuner's matmul as it is: 270 of its
#     configurations fault on the H100): exhaustive from a cold cache, then the same space with the
#     faulting ones excluded (exclude_faults.py); the two runs' verdicts compared
#  3. where a candidate's GREEN time goes, before (bundle/evo_before: HEAD's GREEN with the step
#     times) and after, on the first 120 configurations of sdpa_fp8 (exhaustive order), warm compile cache
set -u; export PYTHONUNBUFFERED=1
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/a.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
R=docs/results/judge
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
EVO_CACHE=/tmp/a-tests timeout 330 bundle/evo_tests \
  --gtest_filter='GpuGreenSafety*:GuardedDevice*:GreenCompareOnDevice*:GpuCli.AWorkerKilled*:GpuGates.*:GpuReferenceStore*:WorkerProtocol*:-GpuGates.Fa3*' \
  > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure|Expected|Which is|Value of" $S/gpu_tests.txt | head -20; pack
mm() {  # name, profile, cache
  local t0=$(date +%s%N)
  EVO_CACHE=$3 timeout 240 bundle/evo --db $S/$1.db run --profile $2 --strategy exhaustive --budget 1000 --devices 0 \
    --no-sanitize > $S/$1.txt 2>&1
  log "$1: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline' $S/$1.txt | paste -sd' ')"
  bundle/evo --db $S/$1.db export-landscape 1 --to $S/$1.json > /dev/null 2>&1
}
mm mm_faults examples/kernel_tuner/matmul.json /tmp/a-mm
python3 $R/exclude_faults.py make examples/kernel_tuner/matmul.json $S/mm_faults.json examples/kernel_tuner/matmul_nofaults.json | tee -a $S/log.txt
mm mm_nofaults examples/kernel_tuner/matmul_nofaults.json /tmp/a-mm2
python3 $R/exclude_faults.py compare $S/mm_faults.json $S/mm_nofaults.json | tee -a $S/log.txt; pack
EVO_CACHE=/tmp/a-sdpa timeout 120 bundle/evo compile sdpa_fp8 --all > $S/sdpa_compile.txt 2>&1
log "sdpa_fp8 compile --all: $(tail -1 $S/sdpa_compile.txt)"
for b in evo_before evo; do
  rm -rf /tmp/a-sdpa/reference
  t0=$(date +%s%N)
  EVO_CACHE=/tmp/a-sdpa EVO_GREEN_TIMES=$S/green_$b.jsonl timeout 150 bundle/$b --db $S/sdpa_$b.db run --profile sdpa_fp8 \
    --strategy exhaustive --budget 120 --devices 0 --no-sanitize > $S/sdpa_$b.txt 2>&1
  log "sdpa_fp8 120 ($b): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time|^pipeline' $S/sdpa_$b.txt | paste -sd' ')"
  bundle/evo --db $S/sdpa_$b.db export-landscape 1 --to $S/sdpa_$b.json > /dev/null 2>&1
done
python3 $R/green_times.py $S/green_evo_before.jsonl $S/green_evo.jsonl $S/sdpa_evo_before.json $S/sdpa_evo.json | tee -a $S/log.txt
pack
