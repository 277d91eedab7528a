#!/usr/bin/env bash
# Call C (sixteenth session, 4 x H200, 64 cores): call A's A/B on the host where the forks hurt most.
# Compile workers forked from the run (fork: d61867a's compile pool) against started anew (spawn:
# 131f3e9, the head), alternated, each from an empty compile cache and trial store, with the pool (one
# per build), on all four GPUs:
#   1. Kernel Tuner's convolution, the default strategy at 68 evaluations, seed 2, three of each;
#   2. the README's main job (sdpa_fp8, budget 200, GPU 0), two of each.
# Then on the head, the issue's protocol with the pool on 1, 2 and 4 GPUs, gemm_fp16 and sdpa_fp8.
# Predicted (call H on this host: the draw 2.1-3.0 s with 64 forks; call A on 2 x H200: 0.73-0.98 s ->
# 0.47-0.53 s): the draw 2.0-3.0 s -> 0.5-0.9 s; the first jobs 0.8-1.5 s sooner; the convolution's
# wall (6.5-7.8 s in call H) 0.5-1.2 s shorter and its ratio to the every-compile bound 1.24-1.46x ->
# 1.05-1.25x; the main job unchanged within noise; the protocol as call C of scale14 (gemm_fp16
# 3.68-3.85x, sdpa_fp8 3.64-3.82x on 4 GPUs; 1.92-2.08x on 2).
# carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"]; evo_fork.xz travels untracked.
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
rm -rf bundle_fork; cp -r bundle bundle_fork; rm -f bundle_fork/evo_tests; xz -dc evo_fork.xz > bundle_fork/evo; chmod +x bundle_fork/evo
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
trace_sum() {  # the draw ahead and each GPU's first job, from a trace
  python3 - "$1" <<'PY'
import json,sys
ev=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t0=min(e['ts'] for e in ev if 'ts' in e)
ahead=[e['dur']/1e3 for e in ev if e.get('name')=="GREEN's inputs drawn ahead"]
jobs=sorted((e['ts']-t0)/1e3 for e in ev if e.get('name')=='job' and not str(e.get('tid','')).endswith('profiler'))
print("drawn ahead %s ms; first jobs start at %s ms" % ([round(a) for a in ahead], [round(j) for j in jobs[:4]]))
PY
}
for b in fork spawn; do
  d=$PWD/bundle; [ $b = fork ] && d=$PWD/bundle_fork
  EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL_DIR=/tmp/c-pool-$b $d/evo pool start --devices all > $S/pool_$b.txt 2>&1
  log "pool $b: rc=$? $(grep -c ready $S/pool_$b.txt) ready"
done
for i in 1 2 3; do for b in fork spawn; do
  d=$PWD/bundle; [ $b = fork ] && d=$PWD/bundle_fork; n=conv_${b}_$i
  left=$(( 170 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { log "$n skipped"; continue; }
  rm -rf /tmp/c-cache; t0=$(date +%s%N)
  EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL=1 EVO_POOL_DIR=/tmp/c-pool-$b EVO_TRACE=$S/$n.trace.jsonl \
    EVO_CACHE=/tmp/c-cache timeout $left $d/evo --db $S/$n.db run --profile examples/kernel_tuner/convolution.json --budget 68 --seed 2 --devices all > $S/$n.txt 2>&1
  log "$n: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time|^pipeline' $S/$n.txt | paste -sd' ' | cut -c1-420)"
  log "$n: $(trace_sum $S/$n.trace.jsonl 2>&1 | tail -1)"
  pack
done; done
for i in 1 2; do for b in fork spawn; do
  d=$PWD/bundle; [ $b = fork ] && d=$PWD/bundle_fork; n=main_${b}_$i
  left=$(( 250 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { log "$n skipped"; continue; }
  rm -rf /tmp/c-main; mkdir -p /tmp/c-main; t0=$(date +%s%N)
  (cd /tmp/c-main && EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL=1 EVO_POOL_DIR=/tmp/c-pool-$b EVO_CACHE=/tmp/c-main/cache \
    timeout $left $d/evo run --budget 200 > $S/$n.txt 2>&1)
  log "$n: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time|^pipeline' $S/$n.txt | paste -sd' ' | cut -c1-420)"
  pack
done; done
EVO_BINARY=$PWD/bundle_fork/evo LD_LIBRARY_PATH=$PWD/bundle_fork/lib EVO_POOL_DIR=/tmp/c-pool-fork bundle_fork/evo pool stop >> $S/log.txt 2>&1
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/c-pool-spawn
for prof in gemm_fp16 sdpa_fp8; do
  n=${prof}_pool; left=$(( 420 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { log "$n skipped"; continue; }
  EVO_POOL=1 OUT=$S/$n EVO_CACHE=/tmp/c-$prof timeout $left bash scripts/gpu-devices.sh $prof 1000 "0 0,1 all" > /dev/null 2>&1
  log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*//' | cut -c1-160 | paste -sd' ')"
  pack
done
bundle/evo pool stop >> $S/log.txt 2>&1
left=$(( 570 - ($(date +%s) - T0) ))
if [ $left -gt 60 ]; then
  log "GPU tests with ${left} s left"
  EVO_CACHE=/tmp/c-tests timeout $left bundle/evo_tests --gtest_filter='GpuGreenSafety.*:GpuCli.AWorkerKilled*:GpuPool.APoolWorkerKilled*' > $S/gpu_tests.txt 2>&1
  log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
  grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
fi
log "done after $(( $(date +%s) - T0 )) s"; pack
