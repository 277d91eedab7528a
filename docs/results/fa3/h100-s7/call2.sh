#!/usr/bin/env bash
# call 2: EXP_BEFORE_MAX as committed to the working tree (K_j released before the softmax; a recomputation from
# global memory): A/B (5 rounds, clock sampled), timeline of the D=128 rows, GREEN of the recomputation
# (SDPA_RESCORE_RISE=0, STAGES=2 WG_PIPE=1 slices), then whole EXP_BEFORE_MAX=1 slices of three spaces
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c2.tgz -C $S . ; }
R=docs/results/fa3/h100-s7; R6=docs/results/fa3/h100-s6
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_ab.csv 2>&1 & SMI=$!
timeout 200 python3 bench/ab.py $R/rows_c2.json --shapes long,long128,prefill128,long128_causal --rounds 5 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; kill $SMI; python3 $R6/clock_summary.py $S/clocks_ab.csv >> $S/log.txt; pack
timeout 60 python3 bench/timeline.py $R/rows_c2_tl.json --shape long128 --json $S/timeline.json > $S/timeline.txt 2>&1
echo "$(date +%T) timeline rc=$?" >> $S/log.txt; gzip $S/timeline.json; pack
for n in sdpa_fp8pv_wgmma_d128 sdpa_fp16_wgmma sdpa_fp8pv_wgmma sdpa_fp16_wgmma_d128 sdpa_fp8_wgmma_d128 sdpa_fp8_wgmma; do
  timeout 45 python3 tests/gpu/sdpa_check.py $R/profiles/${n}_redo.json --only EXP_BEFORE_MAX=1,STAGES=2,WG_PIPE=1 --json $S/redo_$n.json > $S/redo_$n.txt 2>&1
  echo "$(date +%T) redo $n rc=$?" >> $S/log.txt; pack
done
for n in sdpa_fp8pv_wgmma_d128 sdpa_fp16_wgmma_d128 sdpa_fp16_wgmma; do
  timeout 120 python3 tests/gpu/sdpa_check.py $R/profiles/${n}_ebm.json --only EXP_BEFORE_MAX=1 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
cat $S/log.txt; sed -n '/^row/,$p' $S/ab.txt; grep -h "^fp\|^e4m3\|between items" $S/timeline.txt | cut -c1-220 | sort -u; grep -h "GREEN:\|compile:\|^worst\|^SPILL\|FAIL" $S/redo_*.txt $S/check_*.txt | cut -c1-250
