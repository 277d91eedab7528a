#!/usr/bin/env bash
# call 4: GPU tests (the new three-warpgroup and LAZY_RESCALE case among them), A/B of LAZY_RESCALE at the
# fastest fp8 D=128 tiles, evo runs and exports of the two e4m3 P·V profiles (both changed)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s4 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c4.tgz -C $S . ; }
timeout 200 bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
timeout 100 python3 bench/ab.py .sass/s4/rows_c4.json --shapes long128,prefill128,long128_causal --rounds 7 --json $S/ab_lazy128.json > $S/ab_lazy128.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; pack
mkdir -p fa3run && rm -f fa3run/evo.db*
for prof in sdpa_fp8pv_wgmma_d128 sdpa_fp8pv_wgmma; do
  timeout 100 bundle/evo --db fa3run/evo.db run --profile "$prof" --budget 30 -q > $S/run_$prof.txt 2>&1
  echo "$(date +%T) run $prof rc=$?" >> $S/log.txt
  bundle/evo --db fa3run/evo.db show-elites --profile "$prof" --top 5 > $S/elites_$prof.txt 2>&1
  bundle/evo --db fa3run/evo.db export best --profile "$prof" --to $S/kernels > $S/export_$prof.txt 2>&1
  pack
done
cp fa3run/evo.db $S/fa3run.db; pack
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED" $S/gpu-tests.txt; sed -n '/^row/,$p' $S/ab_lazy128.txt; grep -h "^best" $S/run_*.txt; cat $S/export_*.txt
