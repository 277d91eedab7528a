#!/usr/bin/env bash
# call 3: GREEN sweeps of the fp8pv profiles' LAZY_RESCALE=1 slice (the shipped profiles), peers at D=128 and
# D=64 with the fastest configurations of every sweep so far
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s4 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c3.tgz -C $S . ; }
for n in sdpa_fp8pv_wgmma_d128 sdpa_fp8pv_wgmma; do
  timeout 90 python3 tests/gpu/sdpa_check.py profiles/$n.json --only LAZY_RESCALE=1 --time 8 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
F=docs/results/fa3/h100-final; S3=docs/results/fa3/h100-s3; S4=docs/results/fa3/h100-s4
timeout 200 python3 bench/peers.py --shapes long128,prefill128,long128_causal --best $S3/c2/check_sdpa_fp16_wgmma_d128.json --best $S3/c5/check_sdpa_fp8pv_wgmma_d128.json --best $S/check_sdpa_fp8pv_wgmma_d128.json --rounds 7 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt; pack
M512="MMA_PATH=2,TILE_M=64,TILE_N=128,NUM_WARPS=4,STAGES=2,USE_CP_ASYNC=1,USE_WMMA_QK=1,USE_WMMA_PV=1,SWIZZLE=2,WARP_SPEC=0,SPLIT_KV=2,WG_PIPE=0,USE_TMA=0,MIN_BLOCKS=1,PINGPONG=0,PERSIST=0"
timeout 150 python3 bench/peers.py --shapes mission,mission512,long --fp16-profile profiles/sdpa_fp16_wgmma.json --fp8-profile profiles/sdpa_fp8_wgmma.json --best $F/fa3_check_sdpa_fp16_wgmma.json --best $F/fa3_check_sdpa_fp8_wgmma.json --best $S3/c5/check_sdpa_fp8pv_wgmma.json --best $S4/c1/check_sdpa_fp16_wgmma.json --best $S4/c1/check_sdpa_fp8_wgmma.json --best $S/check_sdpa_fp8pv_wgmma.json --fp16 mission:kernels/sdpa_fp16_wgmma-04c23aba105d6613.cu --fp16 mission512:$M512 --fp8 mission:kernels/sdpa_fp8_wgmma-53b8f06e3eaab945.cu --fp8 mission512:kernels/sdpa_fp8_wgmma-53b8f06e3eaab945.cu --rounds 5 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt; pack
cat $S/log.txt; grep -h "GREEN:\|compile:\|^best at long" $S/check_*.txt | cut -c1-330; grep -h "^evo f" $S/peers128.txt $S/peers64.txt | cut -c1-300; grep -h -A9 "^peer" $S/peers128.txt $S/peers64.txt; grep -h "^target" $S/peers128.txt $S/peers64.txt
