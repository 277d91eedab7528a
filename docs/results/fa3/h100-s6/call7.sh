#!/usr/bin/env bash
# call 7: ROWSUM_MMA (the row sums from the P·V wgmma, a block of e4m3 ones appended to V's transpose) —
# GREEN sweeps of its slices of the two e4m3 P·V spaces (scratch profiles in profiles/ here: the shipped ones
# get the knob only if it is kept), the A/B of each space's fastest configurations with and without it
# (7 rounds), and the timeline of the D=128 pairs in SM clocks
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c7.tgz -C $S . ; }
R=docs/results/fa3/h100-s6
for n in sdpa_fp8pv_wgmma_d128_rowsum sdpa_fp8pv_wgmma_rowsum; do
  timeout 150 python3 tests/gpu/sdpa_check.py $R/profiles/$n.json --only ROWSUM_MMA=1 --time 8 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
timeout 120 python3 bench/timeline.py $R/rows_c7.json --shape long128 --json $S/timeline_c7.json > $S/timeline_c7.txt 2>&1
echo "$(date +%T) timeline rc=$?" >> $S/log.txt; gzip $S/timeline_c7.json; pack
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_ab.csv 2>&1 & SMI=$!
timeout 280 python3 bench/ab.py $R/rows_c7.json --shapes long,long128,prefill128,long128_causal --rounds 7 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; kill $SMI; python3 $R/clock_summary.py $S/clocks_ab.csv >> $S/log.txt; pack
cat $S/log.txt; grep -h "GREEN:\|compile:\|^best at\|worst" $S/check_*.txt | cut -c1-260; sed -n '/^row (SM/,$p' $S/timeline_c7.txt; sed -n '/^row/,$p' $S/ab.txt
