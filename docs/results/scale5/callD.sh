#!/usr/bin/env bash
# Call D (4 GPUs of one host), the session's last: MetricGpu.* again (the flush test as mended after
# call C), where a metrics collection's time goes (EVO_METRICS_TIMES, the default strategy on GPU 0),
# then, only when the host's GPUs are H100s, the hub's convolution_milo T1 file exhaustive on every
# GPU for issue 36's H100 landscape (an H200 one was recorded last session).
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -f bundle.tar.xz ] && { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/d.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
gpus=$(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';')
log "gpus: $gpus, $(nproc) cores"

EVO_CACHE=/tmp/d-tests timeout 60 bundle/evo_tests --gtest_filter='MetricGpu.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|^\[       OK|Failure|Which is|Value of|Expected|dram__bytes_read|copy_f4 8" $S/gpu_tests.txt | head -40 | tee -a $S/log.txt; pack

EVO_METRICS_TIMES=$S/metrics_times.jsonl EVO_CACHE=/tmp/d-sdpa timeout 120 bundle/evo --db $S/m.db run --profile sdpa_fp8 \
  --budget 60 --seed 1 --devices 0 --no-sanitize -q > $S/m.txt 2>&1
log "default strategy 60, metrics step times: rc=$? $(grep -E '^run|^time' $S/m.txt | paste -sd' ' | cut -c1-400)"
python3 - $S/metrics_times.jsonl <<'PY' | tee -a $S/log.txt
import json, statistics as st, sys
L = [json.loads(l) for l in open(sys.argv[1])]
for k in L[0]:
    v = [l[k] * 1000 for l in L if k in l]
    print(f"  {k:8s} n={len(v)} median {st.median(v):8.2f} ms, mean {st.mean(v):8.2f} ms")
PY
pack

if echo "$gpus" | grep -q H100; then
  left=$(( 390 - ($(date +%s) - T0) ))
  log "convolution_milo T1, exhaustive, cold cache, every GPU, --time-limit $left s"
  EVO_CACHE=/tmp/d-milo timeout $((left + 25)) bundle/evo --db $S/milo.db run --profile tests/data/t1/convolution_milo.json \
    --strategy exhaustive --budget 5000 --devices all --time-limit $left > $S/milo.txt 2>&1
  log "convolution_milo: rc=$? $(grep -E '^run [0-9]|^best|^pipeline|^time|reference' $S/milo.txt | paste -sd' ' | cut -c1-700)"
  bundle/evo --db $S/milo.db export-landscape 1 --to $S/landscape_convolution_milo_h100.json > /dev/null 2>&1
  bundle/evo --db $S/milo.db db check >> $S/log.txt 2>&1
else
  log "not H100s: convolution_milo left for an H100 host"
fi
rm -f $S/*.db-* $S/*.db; log "done after $(( $(date +%s) - T0 )) s"; pack
