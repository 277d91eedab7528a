#!/usr/bin/env bash
# call 3: EXP_BEFORE_MAX with one bit of headroom (e4m3 P): A/B (5 rounds), GREEN of the profile's knob slice (254)
# and of its recomputation (SDPA_RESCORE_RISE=0, STAGES=2 WG_PIPE=1), the FA3 GPU test, evo run --budget 100 and export
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s7 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c3.tgz -C $S . ; }
R=docs/results/fa3/h100-s7; R6=docs/results/fa3/h100-s6; p=sdpa_fp8pv_wgmma_d128
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_ab.csv 2>&1 & SMI=$!
timeout 80 python3 bench/ab.py $R/rows_c3.json --shapes long128,prefill128,long128_causal --rounds 5 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; kill $SMI; python3 $R6/clock_summary.py $S/clocks_ab.csv >> $S/log.txt; pack
timeout 130 python3 tests/gpu/sdpa_check.py profiles/$p.json --only EXP_BEFORE_MAX=1 --time 6 --json $S/check_$p.json > $S/check_$p.txt 2>&1
echo "$(date +%T) check $p rc=$?" >> $S/log.txt; pack
timeout 50 python3 tests/gpu/sdpa_check.py $R/profiles/${p}_redo.json --only EXP_BEFORE_MAX=1,STAGES=2,WG_PIPE=1 --json $S/redo_$p.json > $S/redo_$p.txt 2>&1
echo "$(date +%T) redo $p rc=$?" >> $S/log.txt; pack
timeout 120 bundle/evo_tests --gtest_filter='GpuGates.Fa3*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
rm -f /tmp/s7run3.db*
timeout 200 bundle/evo --db /tmp/s7run3.db run --profile $p --budget 100 -q > $S/run_$p.txt 2>&1
echo "$(date +%T) run $p rc=$?" >> $S/log.txt
bundle/evo --db /tmp/s7run3.db show-elites --profile $p --top 8 > $S/elites_$p.txt 2>&1
bundle/evo --db /tmp/s7run3.db export best --profile $p --to $S/kernels > $S/export_$p.txt 2>&1; pack
cat $S/log.txt; sed -n '/^row/,$p' $S/ab.txt; grep -h "GREEN:\|compile:\|^worst\|^SPILL\|FAIL\|^best at" $S/check_$p.txt $S/redo_$p.txt | cut -c1-250; grep -E "tests ran|PASSED|FAILED|OK \]" $S/gpu-tests.txt | head; grep -h "^best\|evaluations" $S/run_$p.txt | head -5; cat $S/export_$p.txt; head -12 $S/elites_$p.txt
