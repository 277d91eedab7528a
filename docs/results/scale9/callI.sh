#!/usr/bin/env bash
# Call I (2 GPUs of one host): the final code, after the workers' trace tracks were named by the
# coordinator's GPU number (a worker seeing its GPU alone has it as its device 0): gemm_fp16's
# exhaustive sweep on 1 and 2 GPUs, traced, and the trace's summary. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
EVO_TRACE=$S/gemm.trace.jsonl OUT=$S/gemm EVO_CACHE=/tmp/i-gemm timeout 100 bash scripts/gpu-devices.sh gemm_fp16 1000 "0 0,1" > /dev/null 2>&1
echo "rc=$?"; grep -E "devices [0-9,]+: rc|x one GPU|verdicts differing" $S/gemm/session.log | cut -c1-300
python3 scripts/trace-summary.py $S/gemm.trace.jsonl | grep -E "== run|GPU workers started|gpu [01]:|lane" | cut -c1-220
tar czf $OUT/i.tgz -C $S .
