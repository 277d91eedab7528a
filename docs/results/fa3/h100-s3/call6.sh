#!/usr/bin/env bash
# call 6: fp16 mission512 sweep, peers (D=64 and D=128 again), ncu of the final fp8pv kernel, d128 re-exports
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-c6 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c6.tgz -C $S . ; }
python3 -c "
import json; p=json.load(open('profiles/sdpa_fp16_wgmma.json')); p['objective']='mission512'; p['name']='sdpa_fp16_wgmma_m512'
json.dump(p,open('profiles/_m512_fp16.json','w'),indent=1)"
timeout 150 python3 tests/gpu/sdpa_check.py profiles/_m512_fp16.json --time 6 --json $S/check_m512_fp16.json > $S/check_m512_fp16.txt 2>&1
echo "$(date +%T) m512 sweep rc=$?" >> $S/log.txt; pack
F=docs/results/fa3/h100-final; C5=.sass/c5
timeout 130 python3 bench/peers.py --shapes mission,mission512,long --fp16-profile profiles/sdpa_fp16_wgmma.json --fp8-profile profiles/sdpa_fp8_wgmma.json --best $F/fa3_check_sdpa_fp16_wgmma.json --best $S/check_m512_fp16.json --best $F/fa3_check_sdpa_fp8_wgmma.json --best $C5/check_sdpa_fp8pv_wgmma.json --fp16 mission:kernels/sdpa_fp16_wgmma-04c23aba105d6613.cu --fp8 mission:kernels/sdpa_fp8_wgmma-53b8f06e3eaab945.cu --fp8 mission512:kernels/sdpa_fp8_wgmma-53b8f06e3eaab945.cu --rounds 5 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt; pack
timeout 200 python3 bench/peers.py --shapes long128,prefill128,long128_causal --best .sass/c2/check_sdpa_fp16_wgmma_d128.json --best $C5/check_sdpa_fp8pv_wgmma_d128.json --rounds 7 --out $S/peers128.json > $S/peers128.txt 2>&1
echo "$(date +%T) peers128 rc=$?" >> $S/log.txt; pack
timeout 100 ncu --profile-from-start off --section SourceCounters --section WarpStateStats --section ComputeWorkloadAnalysis --section SpeedOfLight --import-source no -o /tmp/steps -f python3 bench/ab.py .sass/ncu_steps.json --shapes long128 --profile-once > $S/ncu_steps.txt 2>&1
echo "$(date +%T) ncu rc=$?" >> $S/log.txt
ncu -i /tmp/steps.ncu-rep --print-details all >> $S/ncu_steps.txt 2>&1
ncu -i /tmp/steps.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > $S/ncu_steps_sass.csv.gz; pack
mkdir -p fa3run && rm -f fa3run/evo.db*
for prof in sdpa_fp16_wgmma_d128 sdpa_fp8_wgmma_d128; do
  timeout 100 bundle/evo --db fa3run/evo.db run --profile "$prof" --budget 30 -q > $S/run_$prof.txt 2>&1
  echo "$(date +%T) run $prof rc=$?" >> $S/log.txt
  bundle/evo --db fa3run/evo.db show-elites --profile "$prof" --top 5 > $S/elites_$prof.txt 2>&1
  bundle/evo --db fa3run/evo.db export best --profile "$prof" --to $S/kernels > $S/export_$prof.txt 2>&1
  pack
done
cp fa3run/evo.db $S/fa3run.db; pack
cat $S/log.txt; grep -h "^best at mission512\|^best at mission " $S/check_m512_fp16.txt | cut -c1-200; grep -h "^target\|^evo f\|^torch-cudnn\|^triton-fa2 fp8 " $S/peers64.txt $S/peers128.txt; grep -h "^best" $S/run_*.txt
