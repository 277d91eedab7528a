#!/usr/bin/env bash
# Call 3 (the same 4-GPU machine, warm, right after call 2, whose time limit stopped the hub's
# convolution_milo T1 sweep at 974 of 4362): the whole space, exhaustive on every GPU; the compile
# cache call 2 filled (/tmp/c2-milo) still there. carry ["bundle.tar.xz"].
export LD_LIBRARY_PATH=$PWD/bundle/lib; S=$OUT/s; mkdir -p $S
ls bundle >/dev/null 2>&1 || { tar xJf bundle.tar.xz; }
t0=$(date +%s)
EVO_CACHE=/tmp/c2-milo timeout 540 bundle/evo --db $S/milo.db run --profile tests/data/t1/convolution_milo.json \
  --strategy exhaustive --budget 5000 --devices all --time-limit 500 > $S/milo.txt 2>&1
echo "rc=$? $(( $(date +%s) - t0 )) s"; grep -E '^run [0-9]|^best|^pipeline|^time|reference' $S/milo.txt
bundle/evo --db $S/milo.db export-landscape 1 --to $S/landscape_convolution_milo.json > /dev/null 2>&1
tar czf $OUT/c3.tgz -C $S .
