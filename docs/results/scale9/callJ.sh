#!/usr/bin/env bash
# Call J (4 GPUs of one host, eighth session): what call G could not measure for want of a 4-GPU
# host. Each per-GPU worker seeing its own GPU alone (CUDA_VISIBLE_DEVICES=<its entry>) against
# EVO_WORKERS_SEE_ALL=1, alternated: issue 35's exhaustive sweeps of sdpa_fp8 and gemm_fp16 on 1, 2
# and 4 GPUs (scripts/gpu-devices.sh: warm compile cache, reference store emptied before each run),
# every run traced; then `evo run` without --profile on every GPU (the probe that chooses the
# shipped profile, restricted to one GPU since the seventh session and not yet run on a GPU).
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/j.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
python3 docs/results/scale9/init_probe.py 2>&1 | tail -n 4 >> $S/log.txt
for all in 0 1 1 0; do
  for prof in sdpa_fp8 gemm_fp16; do
    n=${prof}_all$all; [ -e $S/$n.trace.jsonl ] && n=${n}_b
    EVO_WORKERS_SEE_ALL=$all EVO_TRACE=$S/$n.trace.jsonl OUT=$S/$n EVO_CACHE=/tmp/j-$prof timeout 120 bash scripts/gpu-devices.sh $prof 1000 "${SETS:-0 0,1 all}" > /dev/null 2>&1
    log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing" $S/$n/session.log | sed -E 's/;.*wall ([0-9.]+ s after the GPU workers. [0-9.]+ s start).*/ ... \1/' | cut -c1-200 | paste -sd' ')"
    python3 scripts/trace-summary.py $S/$n.trace.jsonl 2>&1 | grep -E "== run|workers started" | cut -c1-160 >> $S/log.txt
    pack
  done
done
rm -f p.db*; EVO_CACHE=/tmp/j-probe timeout 150 bundle/evo --db p.db run --budget 8 --devices all > $S/probe_run.txt 2>&1
log "run without --profile on every GPU: rc=$? $(grep -E '^run|profile|^time' $S/probe_run.txt | head -4 | paste -sd' ' | cut -c1-300)"
log "done after $(( $(date +%s) - T0 )) s"; pack
