#!/usr/bin/env bash
# call 3: call 1's segfault under `evo run` (not under `evo eval`, call 2): the worker's call stack.
set -u; S=$OUT/s; mkdir -p $S
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
P=tests/data/profiles/constant_weights.json
EVO_CACHE=/tmp/c3 timeout 100 bundle/evo --db $S/a.db run --profile $P --strategy exhaustive --budget 100 > $S/run.txt 2>&1
echo "rc=$?"
EVO_CACHE=/tmp/c3 timeout 100 bundle/evo --db $S/b.db run --profile $P --strategy exhaustive --budget 20 -j 1 > $S/run_j1.txt 2>&1
echo "rc=$?"
grep -m3 -A30 "fatal signal" $S/run.txt | grep -v "^[0-9a-f]*-[0-9a-f]* .*\(lib\|\[\)" | head -60
grep -m1 "r-xp.*evo$" $S/run.txt
grep -c "fatal signal" $S/run.txt $S/run_j1.txt; grep -hE "^run|^pipeline" $S/run.txt $S/run_j1.txt
bundle/evo --db $S/a.db export-landscape 1 --to $S/a.json >/dev/null 2>&1; python3 -c "import json,collections;l=json.load(open('$S/a.json'));print(collections.Counter(x['status'] for x in l['configs']))"
tar czf $OUT/c3.tgz -C $S .
