#!/usr/bin/env bash
# call 1: three consumer warpgroups (NUM_WARPS=12, TILE_M=192): smoke, GREEN sweeps of the new slice
# (three D=64 profiles, two scratch D=128 ones), A/B against each profile's fastest, peers at D=64
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-w12 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c1.tgz -C $S . ; }
P=profiles; W=.sass/w12
timeout 60 python3 tests/gpu/sdpa_check.py $P/sdpa_fp16_wgmma.json --only NUM_WARPS=12,PINGPONG=1,PERSIST=1 --limit 1 --time 1 --json $S/smoke.json > $S/smoke.txt 2>&1
echo "$(date +%T) smoke rc=$?" >> $S/log.txt; pack
grep -q "GREEN: 1 pass" $S/smoke.txt || { cat $S/log.txt; tail -20 $S/smoke.txt; exit 1; }
for prof in $P/sdpa_fp16_wgmma.json $P/sdpa_fp8pv_wgmma.json $P/sdpa_fp8_wgmma.json $W/sdpa_fp16_wgmma_d128_w12.json $W/sdpa_fp8pv_wgmma_d128_w12.json; do
  n=$(basename $prof .json)
  timeout 100 python3 tests/gpu/sdpa_check.py $prof --only NUM_WARPS=12 --time 8 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
python3 $W/mkrows.py $S > $S/rows.json
timeout 120 python3 bench/ab.py $S/rows.json --shapes long,mission512,long128,prefill128 --rounds 5 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; pack
F=docs/results/fa3/h100-final; C5=docs/results/fa3/h100-s3/c5; C6=docs/results/fa3/h100-s3/c6
timeout 110 python3 bench/peers.py --shapes mission512,long --fp16-profile $P/sdpa_fp16_wgmma.json --fp8-profile $P/sdpa_fp8_wgmma.json --best $F/fa3_check_sdpa_fp16_wgmma.json --best $C6/check_m512_fp16.json --best $F/fa3_check_sdpa_fp8_wgmma.json --best $C5/check_sdpa_fp8pv_wgmma.json --best $S/check_sdpa_fp16_wgmma.json --best $S/check_sdpa_fp8_wgmma.json --best $S/check_sdpa_fp8pv_wgmma.json --fp8 mission512:kernels/sdpa_fp8_wgmma-53b8f06e3eaab945.cu --rounds 5 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt; pack
cat $S/log.txt; grep -h "GREEN:\|compile:\|^best at long \|^best at long  " $S/check_*.txt; sed -n '/^row/,$p' $S/ab.txt; grep -h "^target\|^evo f\|^torch-cudnn" $S/peers64.txt
