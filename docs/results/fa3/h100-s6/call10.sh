#!/usr/bin/env bash
# call 10: the GPU tests on the final binary (ROWSUM_MMA's and ITEM_OVERLAP's GREEN cases among them), an evo run of
# sdpa_fp8pv_wgmma_d128 with ROWSUM_MMA and ITEM_OVERLAP in its space (80 evaluations, 30 % of 264), its export, and the
# peers at head size 128 with that export at long128 (7 rounds, the SM clock sampled beside them)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s6 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c10.tgz -C $S . ; }
R=docs/results/fa3/h100-s6; S3=docs/results/fa3/h100-s3
timeout 300 bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
rm -f /tmp/s6run10.db*; p=sdpa_fp8pv_wgmma_d128
timeout 280 bundle/evo --db /tmp/s6run10.db run --profile $p --budget 80 -q > $S/run_$p.txt 2>&1
echo "$(date +%T) run $p rc=$?" >> $S/log.txt
bundle/evo --db /tmp/s6run10.db show-elites --profile $p --top 8 > $S/elites_$p.txt 2>&1
bundle/evo --db /tmp/s6run10.db export best --profile $p --to $S/kernels > $S/export_$p.txt 2>&1; pack
K=$(ls $S/kernels/$p-*.cu | head -1)
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_128.csv 2>&1 & SMI=$!
timeout 250 python3 bench/peers.py --shapes long128,prefill128,long128_causal --fp8-profile profiles/$p.json --fp8 long128:$K --best $S3/c2/check_sdpa_fp16_wgmma_d128.json --best docs/results/fa3/h100-s6/c7/check_sdpa_fp8pv_wgmma_d128_rowsum.json --best docs/results/fa3/h100-s6/c9/check_sdpa_fp8pv_wgmma_d128.json --rounds 7 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt; kill $SMI; python3 $R/clock_summary.py $S/clocks_128.csv >> $S/log.txt; pack
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED|SKIPPED" $S/gpu-tests.txt | head; grep -h "^best\|evaluations" $S/run_$p.txt | head -5; cat $S/export_$p.txt; head -12 $S/elites_$p.txt; grep -h -A9 "^peer" $S/peers128.txt; grep -h "^target" $S/peers128.txt
