#!/usr/bin/env bash
# call 4: GPU tests, wide-tile A/B, ncu source view, evo run exports (final template)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-c4
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c4.tgz -C $S . ; }
bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
timeout 150 python3 bench/ab.py bench/rows/fa3_wide.json --shapes long128,prefill128,long128_causal,long --rounds 5 --json $S/ab_wide.json > $S/ab_wide.txt 2>&1
echo "$(date +%T) ab_wide rc=$?" >> $S/log.txt; pack
timeout 120 ncu --profile-from-start off --section SourceCounters --section WarpStateStats --section ComputeWorkloadAnalysis --import-source no -o /tmp/wide -f python3 bench/ab.py bench/rows/fa3_wide_ncu.json --shapes long128 --profile-once > $S/ncu_wide.txt 2>&1
echo "$(date +%T) ncu rc=$?" >> $S/log.txt
ncu -i /tmp/wide.ncu-rep --print-details all >> $S/ncu_wide.txt 2>&1
ncu -i /tmp/wide.ncu-rep --page source --csv --print-source sass > $S/ncu_sass.csv 2>&1
gzip -f $S/ncu_sass.csv; pack
mkdir -p fa3run && rm -f fa3run/evo.db*
for prof in sdpa_fp8pv_wgmma_d128 sdpa_fp8pv_wgmma sdpa_fp16_wgmma_d128 sdpa_fp8_wgmma_d128; do
  timeout 100 bundle/evo --db fa3run/evo.db run --profile "$prof" --budget 30 -q > $S/run_$prof.txt 2>&1
  echo "$(date +%T) run $prof rc=$?" >> $S/log.txt
  bundle/evo --db fa3run/evo.db show-elites --profile "$prof" --top 5 > $S/elites_$prof.txt 2>&1
  bundle/evo --db fa3run/evo.db export best --profile "$prof" --to $S/kernels > $S/export_$prof.txt 2>&1
  pack
done
cp fa3run/evo.db $S/fa3run.db; pack
cat $S/log.txt; tail -3 $S/gpu-tests.txt; sed -n '/^row/,$p' $S/ab_wide.txt; grep -h "best\|Best" $S/run_*.txt | tail -8
