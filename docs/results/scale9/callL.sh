#!/usr/bin/env bash
# Call L (one GPU, eighth session): a T1 file whose input is a BinaryRaw DataSource and whose
# condition uses Python's bitwise operators (tests/data/t1/small_types.json, edited here), through
# `evo run`; the hub's convolution_milo T1 file again with the dtype changes (40 evaluations).
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/l.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | paste -sd';')"
W=/tmp/l-t1; rm -rf $W; mkdir -p $W; cp tests/data/t1/small_types.cu $W/
python3 - "$W" <<'PY'
import json, sys, random
w = sys.argv[1]
j = json.load(open("tests/data/t1/small_types.json"))
a = j["KernelSpecification"]["Arguments"][3]
a["FillType"] = "BinaryRaw"; a["DataSource"] = "signal.bin"; a.pop("FillValue", None)
random.seed(5)
open(f"{w}/signal.bin", "wb").write(bytes(random.randrange(256) for _ in range(100000)))
j["ConfigurationSpace"]["Conditions"] = [{"Expression": "block_size_x & (block_size_x - 1) == 0 and items << 1 <= 8",
                                          "Parameters": ["block_size_x", "items"]}]
json.dump(j, open(f"{w}/raw_types.json", "w"), indent=1)
PY
rm -f r.db*; EVO_CACHE=/tmp/l-cache timeout 120 bundle/evo --db r.db run --profile $W/raw_types.json --budget 11 > $S/run_raw.txt 2>&1
log "evo run raw_types.json (BinaryRaw, bitwise condition): rc=$? $(grep -E '^run|^best|memcheck' $S/run_raw.txt | paste -sd' ' | cut -c1-300)"
rm -f c.db*; EVO_CACHE=/tmp/l-cache timeout 400 bundle/evo --db c.db run --profile tests/data/t1/convolution_milo.json --budget 40 > $S/run_conv.txt 2>&1
log "evo run convolution_milo.json 40: rc=$? $(grep -E '^run|^best|^pipeline' $S/run_conv.txt | paste -sd' ' | cut -c1-400)"
log "done after $(( $(date +%s) - T0 )) s"; pack
