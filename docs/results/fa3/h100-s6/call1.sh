#!/usr/bin/env bash
# call 1: PV_WAIT_LATE — the SASS of cubins built here (.sass/s6/cub: MUFU.EX2 before and after the wait for
# P·V in each loop, sass_loops.py), the A/B of the knob on each wgmma profile's fastest configurations, and
# GREEN sweeps of the knob's six slices
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c1.tgz -C $S . ; }
R=docs/results/fa3/h100-s6
for c in .sass/s6/cub/*.cubin; do /usr/local/cuda/bin/cuobjdump -sass $c > $S/sass_$(basename $c .cubin).txt 2>&1; done
python3 $R/sass_loops.py $S/sass_*.txt > $S/sass_loops.txt; gzip $S/sass_*_*.txt; pack
timeout 240 python3 bench/ab.py $R/rows_c1.json --shapes long,long128,prefill128,long128_causal --rounds 5 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; pack
for n in sdpa_fp8pv_wgmma_d128 sdpa_fp16_wgmma_d128 sdpa_fp16_wgmma sdpa_fp8pv_wgmma sdpa_fp8_wgmma sdpa_fp8_wgmma_d128; do
  timeout 100 python3 tests/gpu/sdpa_check.py profiles/$n.json --only PV_WAIT_LATE=1 --time 8 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
cat $S/log.txt $S/sass_loops.txt; sed -n '/^row/,$p' $S/ab.txt; grep -h "GREEN:\|compile:\|^best at long" $S/check_*.txt | cut -c1-300
