#!/usr/bin/env bash
# Call A (eighteenth session, 4 x H200): does the CPU a GPU worker runs on move sdpa_fp8's per-candidate
# host time, and the 2-GPU ratio? Scale16 call M: GREEN's host steps (buffers, inputs, references,
# compare) took 3.3 ms a candidate in one process and 4.4 ms in the others (medians), and the
# 2-GPU passes sat at 1.87-2.01x. The host's topology first (lscpu, nvidia-smi topo, each GPU's
# local_cpulist), then three passes of "0" and "0,1" with the pool and the whole run started
# unpinned, pinned to GPU 0's NUMA node (taskset), and pinned to the other node(s).
# Predicted: if the host has two NUMA nodes, the remote variant's GREEN host steps 20-40 % above the
# local one's, unpinned between; local passes' 2-GPU ratio >= 1.93. One node: the variants equal.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/a.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader | paste -sd';'), $(nproc) cores"
{ lscpu; echo; nvidia-smi topo -m; echo; ls /sys/devices/system/node/ 2>&1; } > $S/topology.txt 2>&1
local_cpus() {  # GPU $1's local_cpulist from sysfs
  local b; b=$(nvidia-smi -i $1 --query-gpu=pci.bus_id --format=csv,noheader | tr 'A-F' 'a-f'); b=${b#0000}
  cat /sys/bus/pci/devices/$b/local_cpulist 2>/dev/null
}
expand() { python3 -c "import sys
s=set()
for p in sys.argv[1].split(','):
    a,_,b=p.partition('-'); s.update(range(int(a),int(b or a)+1))
print(' '.join(map(str,sorted(s))))" "$1"; }
for g in 0 1 2 3; do log "GPU $g local_cpulist: $(local_cpus $g)"; done
L0=$(expand "$(local_cpus 0)"); ALL=$(expand "0-$(( $(nproc) - 1 ))")
LOCAL=$(echo $L0 | tr ' ' ','); REMOTE=$(comm -23 <(echo $ALL | tr ' ' '\n' | sort) <(echo $L0 | tr ' ' '\n' | sort) | sort -n | paste -sd,)
log "local: $LOCAL"; log "remote: ${REMOTE:-none}"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_POOL_DIR=/tmp/a-pool EVO_CACHE=/tmp/a-sdpa
t=$(date +%s%N); bundle/evo compile sdpa_fp8 --all > $S/compile.txt 2>&1; log "warm cache: $(( ($(date +%s%N) - t) / 1000000 )) ms"
variants="free local"; [ -n "$REMOTE" ] && variants="free local remote"
for pass in 1 2 3; do for v in $variants; do
  case $v in free) pin="";; local) pin="taskset -c $LOCAL";; remote) pin="taskset -c $REMOTE";; esac
  $pin bundle/evo pool start --devices all > $S/pool_${v}_$pass.txt 2>&1
  for d in 0 0,1; do
    left=$(( 520 - ($(date +%s) - T0) )); [ $left -lt 30 ] && { log "pass $pass $v $d skipped"; continue; }
    n=p${pass}_${v}_${d/,/_}; rm -f $S/$n.db*; rm -rf $EVO_CACHE/reference
    t=$(date +%s%N)
    EVO_POOL=1 EVO_GREEN_TIMES=$S/$n.green.jsonl timeout $left $pin bundle/evo --db $S/$n.db run --profile sdpa_fp8 \
      --strategy exhaustive --budget 1000 --devices $d --no-sanitize -q > $S/$n.txt 2>&1
    rc=$? ms=$(( ($(date +%s%N) - t) / 1000000 ))
    log "$n: rc=$rc wall=$ms ms $(grep -E '^time' $S/$n.txt | cut -c1-120)"
  done
  bundle/evo pool stop >> $S/log.txt 2>&1
  pack
done; done
rm -f $S/*.db*
log "done after $(( $(date +%s) - T0 )) s"; pack
