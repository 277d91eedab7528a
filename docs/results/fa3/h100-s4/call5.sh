#!/usr/bin/env bash
# call 5: the changed GPU test, A/B of LAZY_RESCALE at head size 64 (e4m3 P·V), and a second evo run of
# sdpa_fp8pv_wgmma (seed 1, 40 more evaluations) into call 4's database, then its export
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s4 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c5.tgz -C $S . ; }
timeout 100 bundle/evo_tests --gtest_filter='GpuGates.Fa3*' > $S/gpu-test.txt 2>&1
echo "$(date +%T) gpu-test rc=$?" >> $S/log.txt; pack
timeout 120 python3 bench/ab.py .sass/s4/rows_c5.json --shapes long,mission512 --rounds 7 --json $S/ab_lazy64.json > $S/ab_lazy64.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; pack
cp .sass/s4/fa3run.db /tmp/fa3run.db
timeout 120 bundle/evo --db /tmp/fa3run.db run --profile sdpa_fp8pv_wgmma --budget 40 --seed 1 -q > $S/run2_sdpa_fp8pv_wgmma.txt 2>&1
echo "$(date +%T) run rc=$?" >> $S/log.txt
bundle/evo --db /tmp/fa3run.db show-elites --profile sdpa_fp8pv_wgmma --top 5 > $S/elites2_sdpa_fp8pv_wgmma.txt 2>&1
bundle/evo --db /tmp/fa3run.db export best --profile sdpa_fp8pv_wgmma --to $S/kernels > $S/export2_sdpa_fp8pv_wgmma.txt 2>&1
cp /tmp/fa3run.db $S/fa3run.db; pack
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED|OK \]" $S/gpu-test.txt; sed -n '/^row/,$p' $S/ab_lazy64.txt; grep -h "^best\|memcheck" $S/run2_*.txt; cat $S/export2_*.txt
