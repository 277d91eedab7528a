#!/usr/bin/env bash
# call 1: EXP_F16 — the SASS of four cubins built here (MUFU ops, serialisation), the A/B of the fastest
# configuration of each wgmma profile with and without the knob, GREEN sweeps of the knob's slices
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s5 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c1.tgz -C $S . ; }
R=docs/results/fa3/h100-s5
for c in .sass/s5/*.cubin; do
  n=$(basename $c .cubin)
  /usr/local/cuda/bin/cuobjdump -sass $c > $S/sass_$n.txt 2>&1
  echo "$n: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $S/sass_$n.txt) instructions; $(grep -oE 'MUFU\.[A-Z0-9.]+' $S/sass_$n.txt | sort | uniq -c | tr '\n' ' ')" >> $S/sass_counts.txt
done
gzip $S/sass_*_e*.txt; pack
timeout 150 python3 bench/ab.py $R/rows_c1.json --shapes long,long128,prefill128,long128_causal --rounds 5 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; pack
for n in sdpa_fp16_wgmma sdpa_fp8pv_wgmma_d128 sdpa_fp16_wgmma_d128 sdpa_fp8pv_wgmma sdpa_fp8_wgmma sdpa_fp8_wgmma_d128; do
  timeout 100 python3 tests/gpu/sdpa_check.py profiles/$n.json --only EXP_F16=1 --time 8 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
cat $S/log.txt $S/sass_counts.txt; sed -n '/^row/,$p' $S/ab.txt; grep -h "GREEN:\|compile:\|^best at long" $S/check_*.txt | cut -c1-300
