#!/usr/bin/env bash
# call 1 (before the fix; the binary of commit "GREEN step times", whose GREEN is HEAD's): does the
# judge get fooled, and where does a candidate's GREEN time go?
#  a. tests/data/profiles/constant_weights.json exhaustive (54 configurations: every PLANT after
#     each correct one), cold cache; then again from a new database over the warm trial store
#  b. Kernel Tuner's convolution (examples/kernel_tuner/convolution.json), 68 evaluations of the
#     default strategy from a cold cache, then the same from a new database (warm trial store)
#  c. sdpa_fp8 exhaustive (352) with EVO_GREEN_TIMES: GREEN's seconds by step
set -u; export PYTHONUNBUFFERED=1
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/c1.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nproc) cores"
evorun() {  # name, db, cache, args...
  local name=$1 db=$2 cache=$3; shift 3
  local t0=$(date +%s%N)
  EVO_CACHE=$cache timeout 280 bundle/evo --db $S/$db run "$@" > $S/$name.txt 2>&1
  log "$name: rc=$? $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run [0-9]' $S/$name.txt | head -1)"
  bundle/evo --db $S/$db export-landscape 1 --to $S/$name.landscape.json > /dev/null 2>&1
  python3 - $S/$name.landscape.json <<'PY' | tee -a $S/log.txt
import json, sys, collections
l = json.load(open(sys.argv[1]))
c = collections.Counter(x["status"] for x in l["configs"])
print("  statuses:", dict(c))
for x in l["configs"]:
    if x["status"] not in ("measured", "compile_error", "static_rejected"):
        print("  ", x["knobs"], x["status"], x["message"][:160])
PY
  pack
}
evorun cw_cold cw1.db /tmp/c1-cw --profile tests/data/profiles/constant_weights.json --strategy exhaustive --budget 100
evorun cw_warm cw2.db /tmp/c1-cw --profile tests/data/profiles/constant_weights.json --strategy exhaustive --budget 100
evorun conv_cold conv1.db /tmp/c1-conv --profile examples/kernel_tuner/convolution.json --budget 68 --seed 1
evorun conv_warm conv2.db /tmp/c1-conv --profile examples/kernel_tuner/convolution.json --budget 68 --seed 2
EVO_GREEN_TIMES=$S/green_times.jsonl evorun sdpa_fp8 sdpa.db /tmp/c1-sdpa --profile sdpa_fp8 --strategy exhaustive --budget 400
python3 - $S/green_times.jsonl <<'PY' | tee -a $S/log.txt
import json, sys, statistics, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
tot = collections.defaultdict(list)
for r in rows:
    tot["green_s"].append(r["green_s"])
    for k, v in r["steps"].items(): tot[k].append(v)
print(f"GREEN runs {len(rows)}; median ms by step:", {k: round(1000 * statistics.median(v), 2) for k, v in tot.items()})
print("  mean ms by step:", {k: round(1000 * sum(v) / len(rows), 2) for k, v in tot.items()})
PY
pack
