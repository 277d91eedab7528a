#!/usr/bin/env bash
# call 2: LAZY_RESCALE: A/B against eager rescaling (timing switch), then GREEN sweeps of the LAZY_RESCALE=1
# slice of every wgmma profile (scratch copies with the knob added)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-lazy EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c2.tgz -C $S . ; }
L=.sass/lazy
timeout 200 python3 bench/ab.py $L/rows.json --shapes long,mission512,long128,prefill128,long128_causal,tail128 --rounds 5 --json $S/ab_lazy.json > $S/ab_lazy.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; pack
for n in sdpa_fp8pv_wgmma_d128 sdpa_fp16_wgmma sdpa_fp16_wgmma_d128 sdpa_fp8pv_wgmma sdpa_fp8_wgmma sdpa_fp8_wgmma_d128; do
  timeout 80 python3 tests/gpu/sdpa_check.py $L/$n.json --only LAZY_RESCALE=1 --time 6 --json $S/check_$n.json > $S/check_$n.txt 2>&1
  echo "$(date +%T) check $n rc=$?" >> $S/log.txt; pack
done
cat $S/log.txt; sed -n '/^row/,$p' $S/ab_lazy.txt; grep -h "GREEN:\|compile:\|^best at long" $S/check_*.txt
