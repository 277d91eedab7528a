#!/usr/bin/env bash
# Call H (fifteenth session, 4 x H200, 64 cores): GREEN's first inputs on a host full of compiles.
# Call F's trace: a cold run of Kernel Tuner's convolution spent 2.0 s drawing its two 67 MB inputs
# on the coordinator ("GREEN's inputs drawn ahead") while 64 compile workers held every core, and
# each GPU's first GREEN waited for them (references_fill 1.4-1.6 s); alone on the host the same
# draw took 0.5 s, of which the trial store's write and read were most (each fill joined into two
# more copies and hashed twice on the way out, moved and copied on the way in).
# The change (this session): the store writes a fill's header line and bytes in pieces with the
# digest it has, and reads the bytes straight into place; the compile workers run 10 nice steps
# below the run.
# Alternated old (4d2b861) and new, each from an empty compile cache and trial store, with the pool
# (one per build), on all four GPUs:
#   1. the convolution, the default strategy at 68 evaluations, seed 2, three of each;
#   2. the README's main job (sdpa_fp8, budget 200, GPU 0), two of each.
# Then the new build's GPU tests of the reference store, the buffers, the pool and the CLI.
# Predicted: the inputs drawn ahead 2.0 s -> 0.3-0.8 s; the first result 2.5-3.9 s -> 1.0-2.0 s; the
# convolution's wall 7.7-8.8 s -> 6.5-8 s; the main job unchanged within noise (its fills are 31 MB
# over many problems). carry ["bundle.tar.xz"] (+ "examples/kernel_tuner/kernels"); evo_old.xz, the
# old build's evo, travels untracked.
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
rm -rf bundle_old; cp -r bundle bundle_old; rm -f bundle_old/evo_tests; xz -dc evo_old.xz > bundle_old/evo; chmod +x bundle_old/evo
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/h.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
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
for b in old new; do
  d=$PWD/bundle; [ $b = old ] && d=$PWD/bundle_old
  EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL_DIR=/tmp/h-pool-$b $d/evo pool start --devices all > $S/pool_$b.txt 2>&1
  log "pool $b: rc=$? $(grep -c ready $S/pool_$b.txt) ready"
done
for i in 1 2 3; do for b in old new; do
  d=$PWD/bundle; [ $b = old ] && d=$PWD/bundle_old; n=conv_${b}_$i
  left=$(( 200 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { log "$n skipped"; continue; }
  rm -rf /tmp/h-cache; t0=$(date +%s%N)
  EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL=1 EVO_POOL_DIR=/tmp/h-pool-$b EVO_TRACE=$S/$n.trace.jsonl EVO_GREEN_TIMES=$S/$n.green.jsonl \
    EVO_CACHE=/tmp/h-cache timeout $left $d/evo --db $S/$n.db run --profile examples/kernel_tuner/convolution.json --budget 68 --seed 2 --devices all > $S/$n.txt 2>&1
  log "$n: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time|^pipeline' $S/$n.txt | paste -sd' ' | cut -c1-420)"
  log "$n: $(trace_sum $S/$n.trace.jsonl 2>&1 | tail -1)"
  pack
done; done
for i in 1 2; do for b in old new; do
  d=$PWD/bundle; [ $b = old ] && d=$PWD/bundle_old; n=main_${b}_$i
  left=$(( 280 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { log "$n skipped"; continue; }
  rm -rf /tmp/h-main; mkdir -p /tmp/h-main; t0=$(date +%s%N)
  (cd /tmp/h-main && EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL=1 EVO_POOL_DIR=/tmp/h-pool-$b EVO_CACHE=/tmp/h-main/cache \
    timeout $left $d/evo run --budget 200 > $S/$n.txt 2>&1)
  log "$n: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^time|^pipeline' $S/$n.txt | paste -sd' ' | cut -c1-420)"
  pack
done; done
for b in old new; do d=$PWD/bundle; [ $b = old ] && d=$PWD/bundle_old
  EVO_BINARY=$d/evo LD_LIBRARY_PATH=$d/lib EVO_POOL_DIR=/tmp/h-pool-$b $d/evo pool stop >> $S/log.txt 2>&1; done
left=$(( 370 - ($(date +%s) - T0) ))
if [ $left -gt 40 ]; then
  log "GPU tests with ${left} s left"
  EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib EVO_CACHE=/tmp/h-tests timeout $left bundle/evo_tests \
    --gtest_filter='GpuReferenceStore.*:Buffers.*:GpuPool.*:GpuCli.*:GpuGates.*' > $S/gpu_tests.txt 2>&1
  log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ' | cut -c1-600)"
  grep -E "^\[  FAILED|: Failure" -A6 $S/gpu_tests.txt | head -40 | tee -a $S/log.txt
fi
log "done after $(( $(date +%s) - T0 )) s"; pack
