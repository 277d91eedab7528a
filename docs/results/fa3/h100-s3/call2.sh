#!/usr/bin/env bash
# call 2 (session 2026-11-25b): wide key tiles, sweeps and peers
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
for pw in sdpa_fp8pv_wgmma_d128:224 sdpa_fp16_wgmma_d128:176 sdpa_fp8pv_wgmma:224; do
  prof=${pw%%:*}; wide=${pw##*:}
  timeout 60 python3 tests/gpu/sdpa_check.py profiles/$prof.json --only MMA_PATH=3,TILE_N=$wide --limit 1 --time 1 --json $S/smoke_$prof.json > $S/smoke_$prof.txt 2>&1
  echo "$(date +%T) smoke $prof rc=$?" >> $S/log.txt
  grep -q "GREEN: 1 pass" $S/smoke_$prof.txt || continue
  timeout 200 python3 tests/gpu/sdpa_check.py profiles/$prof.json --only MMA_PATH=3 --time 6 --json $S/check_$prof.json > $S/check_$prof.txt 2>&1
  echo "$(date +%T) check $prof rc=$?" >> $S/log.txt
done
tar czf $OUT/c2.tgz -C $S .
bests=(); for f in $S/check_*d128.json; do [ -s $f ] && bests+=(--best $f); done
timeout 200 python3 bench/peers.py --shapes long128,prefill128,long128_causal "${bests[@]}" --rounds 5 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt
tar czf $OUT/c2.tgz -C $S .
F=docs/results/fa3/h100-final
pv64=(); [ -s $S/check_sdpa_fp8pv_wgmma.json ] && pv64=(--best $S/check_sdpa_fp8pv_wgmma.json)
timeout 180 python3 bench/peers.py --shapes mission,mission512,long --fp16-profile profiles/sdpa_fp16_wgmma.json --fp8-profile profiles/sdpa_fp8_wgmma.json --best $F/fa3_check_sdpa_fp16_wgmma.json --best $F/fa3_check_sdpa_fp8_wgmma.json "${pv64[@]}" --fp16 mission:kernels/sdpa_fp16_wgmma-04c23aba105d6613.cu --fp16 mission512:kernels/sdpa_fp16_wgmma-04c23aba105d6613.cu --fp8 mission:kernels/sdpa_fp8_wgmma-53b8f06e3eaab945.cu --fp8 mission512:kernels/sdpa_fp8_wgmma-53b8f06e3eaab945.cu --rounds 5 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt
tar czf $OUT/c2.tgz -C $S .
cat $S/log.txt; grep -h "GREEN\|compile:" $S/check_*.txt; grep -h "^best at long \|^best at prefill \|^best at long_causal" $S/check_*.txt | cut -c1-60; tail -12 $S/peers128.txt; tail -14 $S/peers64.txt
