#!/usr/bin/env bash
# Call N (one GPU, eighth session, after the review): a raw file's fill now keyed once for every
# seed and trial and read where it is (not copied into the trial store); the worker's trace label
# from one helper. Call L's BinaryRaw run again, its trial store listed; the T1, fill and worker GPU
# tests. carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/n.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | paste -sd';')"
W=/tmp/n-t1; rm -rf $W; mkdir -p $W; cp tests/data/t1/small_types.cu $W/
python3 - "$W" <<'PY'
import json, sys, random
w = sys.argv[1]
j = json.load(open("tests/data/t1/small_types.json"))
a = j["KernelSpecification"]["Arguments"][3]
a["FillType"] = "BinaryRaw"; a["DataSource"] = "signal.bin"; a.pop("FillValue", None)
random.seed(5)
open(f"{w}/signal.bin", "wb").write(bytes(random.randrange(256) for _ in range(100000)))
json.dump(j, open(f"{w}/raw_types.json", "w"), indent=1)
PY
rm -f r.db*; EVO_TRACE=$S/raw.trace.jsonl EVO_CACHE=/tmp/n-cache timeout 120 bundle/evo --db r.db run --profile $W/raw_types.json --budget 11 > $S/run_raw.txt 2>&1
log "evo run raw_types.json: rc=$? $(grep -E '^run|^best|memcheck' $S/run_raw.txt | paste -sd' ' | cut -c1-300)"
log "trial store fills: $(find /tmp/n-cache/reference -name '*.fill' | wc -l) (signal raw: none expected; w, bias: 3 seeds each); trace tracks: $(grep -o '"tid":"gpu [0-9]*"' $S/raw.trace.jsonl | sort -u | paste -sd' ')"
EVO_CACHE=/tmp/n-tests timeout 300 bundle/evo_tests --gtest_filter='GpuGates.T1*:GreenCompareOnDevice.*:Buffers.*:WorkerProtocol.*:GpuCli.AWorkerKilled*:GpuReferenceStore.*' > $S/gpu_tests.txt 2>&1
log "gpu tests rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' $S/gpu_tests.txt | paste -sd' ')"
grep -E "^\[  FAILED|Failure" $S/gpu_tests.txt | head | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
