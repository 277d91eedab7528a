#!/usr/bin/env bash
# call 5: the peers with the new template's fastest configurations (c3, c4: --best), 7 rounds each, the clock
# sampled; then the FA3 GPU tests on the bundle
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c5.tgz -C $S . ; }
R=docs/results/fa3/h100-s9; R6=docs/results/fa3/h100-s6
F16=MMA_PATH=3,NUM_WARPS=12,USE_TMA=1,TILE_M=192,TILE_N=128,STAGES=2,WG_PIPE=1,PINGPONG=1,PERSIST=1,STREAM_K=1,ITEM_OVERLAP=1
smi() { nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_$1.csv 2>&1 & SMI=$!; }
smi 128
timeout 250 python3 bench/peers.py --shapes long128,prefill128,long128_causal --best $R/c4/check_sdpa_fp16_wgmma_d128.json --best $R/c3/check_sdpa_fp8pv_wgmma_d128.json --rounds 7 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt; kill $SMI; pack
smi 64
timeout 130 python3 bench/peers.py --shapes long --fp16-profile profiles/sdpa_fp16_wgmma.json --fp16 long:$F16 --best $R/c4/check_sdpa_fp8pv_wgmma.json --rounds 7 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt; kill $SMI; pack
for f in $S/clocks_*.csv; do python3 $R6/clock_summary.py $f; done | tee $S/clocks_summary.txt
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s9 EVO_BINARY="$PWD/bundle/evo"
timeout 120 bundle/evo_tests --gtest_filter='GpuGates.Fa3*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu tests rc=$?" >> $S/log.txt; pack
cat $S/log.txt; grep -h -A9 "^peer" $S/peers128.txt $S/peers64.txt; grep -h "^target" $S/peers128.txt $S/peers64.txt; tail -3 $S/gpu-tests.txt
