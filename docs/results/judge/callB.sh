#!/usr/bin/env bash
# call B (the same 4-GPU machine, right after call A):
#  1. issue 35's scaling: sdpa_fp8 and gemm_fp16 exhaustive on 1, 2 and 4 GPUs (scripts/gpu-devices.sh:
#     warm compile cache, reference store emptied before each run, defaults' gates and metrics), then
#     gemm_fp16 on 4 GPUs with every GPU's metrics pass concurrent (EVO_METRICS_CONCURRENT=1)
#  2. the README's main job, 200 evaluations from an empty database and a cold cache, GPU 0
#  3. Kernel Tuner's convolution as it is (17x17 filter in __constant__ memory), exhaustive on GPU 0
#  4. the FA3 GPU tests (BufferSet kept across candidates: scratch, tensor maps, STREAM_K's counters)
set -u; export PYTHONUNBUFFERED=1
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/b.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
for prof in sdpa_fp8 gemm_fp16; do
  OUT=$S/scale_$prof EVO_CACHE=/tmp/b-$prof timeout 200 bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
  grep -E "devices|x one GPU|configs:|median ratio" $S/scale_$prof/session.log | cut -c1-260 | tee -a $S/log.txt; pack
done
OUT=$S/scale_gemm_concurrent EVO_METRICS_CONCURRENT=1 EVO_CACHE=/tmp/b-gemm_fp16 timeout 100 bash scripts/gpu-devices.sh gemm_fp16 1000 "0 all" > /dev/null 2>&1
grep -E "devices|x one GPU|configs:|median ratio" $S/scale_gemm_concurrent/session.log | cut -c1-260 | sed 's/^/concurrent metrics: /' | tee -a $S/log.txt; pack
t0=$(date +%s%N)
EVO_CACHE=/tmp/b-main timeout 150 bundle/evo --db $S/main.db run --budget 200 --devices 0 > $S/main.txt 2>&1
log "main job (evo run --budget 200, empty db, cold cache): rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^time|^pipeline' $S/main.txt | paste -sd' ')"
bundle/evo --db $S/main.db export-landscape 1 --to $S/main.json > /dev/null 2>&1; pack
t0=$(date +%s%N)
EVO_CACHE=/tmp/b-conv timeout 200 bundle/evo --db $S/conv.db run --profile examples/kernel_tuner/convolution.json \
  --strategy exhaustive --budget 1000 --devices 0 > $S/conv.txt 2>&1
log "kt convolution exhaustive: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]|^best|^pipeline' $S/conv.txt | paste -sd' ')"
bundle/evo --db $S/conv.db export-landscape 1 --to $S/conv.json > /dev/null 2>&1
python3 -c "import json,collections;l=json.load(open('$S/conv.json'));print('  statuses', dict(collections.Counter(x['status'] for x in l['configs'])))" | tee -a $S/log.txt; pack
EVO_CACHE=/tmp/b-fa3 timeout 150 bundle/evo_tests --gtest_filter='GpuGates.Fa3*' > $S/fa3_tests.txt 2>&1
log "fa3 gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' $S/fa3_tests.txt | paste -sd' ')"; pack
