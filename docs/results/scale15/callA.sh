#!/usr/bin/env bash
# Call A (sixteenth session, 2 x H200, 32 cores): compile workers started as fresh programs
# (posix_spawn of evo, docs/results/scale14/spawn_attempt.patch) against forked from the run
# (d61867a, the head), alternated; then the issue's 1/2-GPU protocol and the 2-GPU tests on the head.
# Why: the fifteenth session found that the compile pool forks its workers from the coordinator while
# the coordinator draws GREEN's first inputs, so each page drawn after a fork is copied first (here,
# three 135 MB buffers written during 48 forks: 1.05 s against 0.19 s with none). On 4 x H200 the
# convolution's two 67 MB fills took 2.1-3.0 s to draw in a run, 0.5 s alone (calls G, H).
# Alternated head and spawn, each from an empty compile cache and trial store, with the pool (one per
# build), on both GPUs:
#   1. Kernel Tuner's convolution, the default strategy at 68 evaluations, seed 2, three of each;
#   2. the README's main job (sdpa_fp8, budget 200, GPU 0), two of each.
# Predicted: with 32 workers (half of call H's forks) the draw ahead 1.2-2.0 s (head) -> 0.4-0.9 s
# (spawn); the first result 0.5-1.0 s sooner; the convolution's wall 0.4-1.0 s shorter; the main job
# unchanged within noise (its fills are 31 MB). Then on the head: scripts/gpu-devices.sh with the pool,
# gemm_fp16 and sdpa_fp8 on 1 and 2 GPUs (call B on 4d2b861: gemm 1.96-2.07x, sdpa 1.91-1.96x;
# predicted the same within 0.05), and the 2-GPU tests (22 in call B).
# carry ["bundle.tar.xz", "examples/kernel_tuner/kernels"]; evo_spawn.xz travels untracked.
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
rm -rf bundle_spawn; cp -r bundle bundle_spawn; rm -f bundle_spawn/evo_tests; xz -dc evo_spawn.xz > bundle_spawn/evo; chmod +x bundle_spawn/evo
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/a.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
trace_sum() {  # the draw ahead and each GPU's first job, from a trace
  python3 - "$1" <<'PY'
import json,sys
ev=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
t0=min(e['ts'] for e in ev if 'ts' in e)
ahead=[e['dur']/1e3 for e in ev if e.get('name')=="GREEN's inputs drawn ahead"]
jobs=sorted((e['ts']-t0)/1e3 for e in ev if e.get('name')=='job' and not str(e.get('tid','')).endswith('profiler'))
print("drawn ahead %s ms; first jobs start at %s ms" % ([round(a) for a in ahead], [round(j) for j in jobs[:2]]))
PY
}
for b in head spawn; do
  d=$PWD/bundle; [ $b = spawn ] && d=$PWD/bundle_spawn
  EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL_DIR=/tmp/a-pool-$b $d/evo pool start --devices all > $S/pool_$b.txt 2>&1
  log "pool $b: rc=$? $(grep -c ready $S/pool_$b.txt) ready"
done
for i in 1 2 3; do for b in head spawn; do
  d=$PWD/bundle; [ $b = spawn ] && d=$PWD/bundle_spawn; n=conv_${b}_$i
  left=$(( 170 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { log "$n skipped"; continue; }
  rm -rf /tmp/a-cache; t0=$(date +%s%N)
  EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL=1 EVO_POOL_DIR=/tmp/a-pool-$b EVO_TRACE=$S/$n.trace.jsonl \
    EVO_CACHE=/tmp/a-cache timeout $left $d/evo --db $S/$n.db run --profile examples/kernel_tuner/convolution.json --budget 68 --seed 2 --devices all > $S/$n.txt 2>&1
  log "$n: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time|^pipeline' $S/$n.txt | paste -sd' ' | cut -c1-420)"
  log "$n: $(trace_sum $S/$n.trace.jsonl 2>&1 | tail -1)"
  pack
done; done
for i in 1 2; do for b in head spawn; do
  d=$PWD/bundle; [ $b = spawn ] && d=$PWD/bundle_spawn; n=main_${b}_$i
  left=$(( 250 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { log "$n skipped"; continue; }
  rm -rf /tmp/a-main; mkdir -p /tmp/a-main; t0=$(date +%s%N)
  (cd /tmp/a-main && EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL=1 EVO_POOL_DIR=/tmp/a-pool-$b EVO_CACHE=/tmp/a-main/cache \
    timeout $left $d/evo run --budget 200 > $S/$n.txt 2>&1)
  log "$n: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time|^pipeline' $S/$n.txt | paste -sd' ' | cut -c1-420)"
  pack
done; done
EVO_BINARY=$PWD/bundle_spawn/evo LD_LIBRARY_PATH=$PWD/bundle_spawn/lib EVO_POOL_DIR=/tmp/a-pool-spawn bundle_spawn/evo pool stop >> $S/log.txt 2>&1
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/a-pool-head
for prof in gemm_fp16 sdpa_fp8; do
  n=${prof}_pool; left=$(( 380 - ($(date +%s) - T0) )); [ $left -lt 40 ] && { log "$n skipped"; continue; }
  EVO_POOL=1 OUT=$S/$n EVO_CACHE=/tmp/a-$prof timeout $left bash scripts/gpu-devices.sh $prof 1000 "0 0,1" > /dev/null 2>&1
  log "$n: rc=$? $(grep -E "devices [0-9a-z,]+: rc|x one GPU|verdicts differing|median" $S/$n/session.log | sed -E 's/evaluations.s;.*//' | cut -c1-160 | paste -sd' ')"
  pack
done
bundle/evo pool stop >> $S/log.txt 2>&1
left=$(( 575 - ($(date +%s) - T0) ))
log "GPU tests with ${left} s left"
EVO_CACHE=/tmp/a-tests timeout $left bundle/evo_tests --gtest_filter='GpuCli.*:GpuGreenSafety.*:GpuPool.*:WorkerProtocol.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
