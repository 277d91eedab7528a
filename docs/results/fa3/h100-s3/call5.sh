#!/usr/bin/env bash
# call 5: GPU tests, transpose A/B, fp8pv sweeps, peers, fp8pv evo runs
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-c5 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c5.tgz -C $S . ; }
timeout 150 python3 bench/ab.py .sass/ab_transpose.json --shapes long128,prefill128,long128_causal,long --rounds 5 --json $S/ab_transpose.json > $S/ab_transpose.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; pack
for prof in sdpa_fp8pv_wgmma_d128 sdpa_fp8pv_wgmma; do
  timeout 60 python3 tests/gpu/sdpa_check.py profiles/$prof.json --only MMA_PATH=3,TILE_N=224 --limit 1 --time 1 --json $S/smoke_$prof.json > $S/smoke_$prof.txt 2>&1
  grep -q "GREEN: 1 pass" $S/smoke_$prof.txt || { echo "smoke $prof failed" >> $S/log.txt; continue; }
  timeout 150 python3 tests/gpu/sdpa_check.py profiles/$prof.json --time 6 --json $S/check_$prof.json > $S/check_$prof.txt 2>&1
  echo "$(date +%T) check $prof rc=$?" >> $S/log.txt; pack
done
bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
C2=.sass/c2
timeout 170 python3 bench/peers.py --shapes long128,prefill128,long128_causal --best $C2/check_sdpa_fp16_wgmma_d128.json --best $S/check_sdpa_fp8pv_wgmma_d128.json --rounds 5 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt; pack
F=docs/results/fa3/h100-final
timeout 120 python3 bench/peers.py --shapes mission,mission512,long --fp16-profile profiles/sdpa_fp16_wgmma.json --fp8-profile profiles/sdpa_fp8_wgmma.json --best $F/fa3_check_sdpa_fp16_wgmma.json --best $F/fa3_check_sdpa_fp8_wgmma.json --best $S/check_sdpa_fp8pv_wgmma.json --fp16 mission:kernels/sdpa_fp16_wgmma-04c23aba105d6613.cu --fp16 mission512:kernels/sdpa_fp16_wgmma-04c23aba105d6613.cu --fp8 mission:kernels/sdpa_fp8_wgmma-53b8f06e3eaab945.cu --fp8 mission512:kernels/sdpa_fp8_wgmma-53b8f06e3eaab945.cu --rounds 5 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt; pack
mkdir -p fa3run && rm -f fa3run/evo.db*
for prof in sdpa_fp8pv_wgmma_d128 sdpa_fp8pv_wgmma; do
  timeout 90 bundle/evo --db fa3run/evo.db run --profile "$prof" --budget 30 -q > $S/run_$prof.txt 2>&1
  echo "$(date +%T) run $prof rc=$?" >> $S/log.txt
  bundle/evo --db fa3run/evo.db show-elites --profile "$prof" --top 5 > $S/elites_$prof.txt 2>&1
  bundle/evo --db fa3run/evo.db export best --profile "$prof" --to $S/kernels > $S/export_$prof.txt 2>&1
  pack
done
cp fa3run/evo.db $S/fa3run.db; pack
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED" $S/gpu-tests.txt; sed -n '/^row/,$p' $S/ab_transpose.txt; grep -h "GREEN:\|compile:" $S/check_*.txt; grep -h "^target\|^evo f" $S/peers128.txt $S/peers64.txt; grep -h "^best" $S/run_*.txt
