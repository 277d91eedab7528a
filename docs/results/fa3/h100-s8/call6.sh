#!/usr/bin/env bash
# call 6: fp16 long D=64 — ITEM_OVERLAP in the fp16 D=64 space (a scratch profile with the knob): GREEN of its slice,
# the A/B with WG_PIPE 0 and 1 (11 rounds), then the peers at long D=64 (11 rounds) with the A/B's fastest row
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c6.tgz -C $S . ; }
R=docs/results/fa3/h100-s8; R6=docs/results/fa3/h100-s6; P=$R/profiles/sdpa_fp16_wgmma_xit.json
smi() { nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $S/clocks_$1.csv 2>&1 & SMI=$!; }
timeout 90 python3 tests/gpu/sdpa_check.py $P --only ITEM_OVERLAP=1 --json $S/check_xit.json > $S/check_xit.txt 2>&1
echo "$(date +%T) check rc=$?" >> $S/log.txt; pack
smi ab
timeout 100 python3 bench/ab.py $R/rows_c6.json --shapes long --rounds 11 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; kill $SMI; pack
BEST=$(python3 -c "
import json; rows = {r['name']: r['knobs'] for r in json.load(open('$R/rows_c6.json'))}
ab = json.load(open('$S/ab.json')); n = min((r for r in ab if 'persist' in r), key=lambda r: ab[r]['times_us']['long'])
print(rows[n])")
echo "peers with: $BEST" >> $S/log.txt
smi 64
timeout 200 python3 bench/peers.py --shapes long --fp16-profile $P --fp16 long:$BEST --fp8-profile profiles/sdpa_fp8pv_wgmma.json --fp8 long:kernels/sdpa_fp8pv_wgmma-8bc41ce62b12bc83.cu --rounds 11 --out $S/peers64.json > $S/peers64.txt 2>&1
echo "$(date +%T) peers64 rc=$?" >> $S/log.txt; kill $SMI; pack
for f in $S/clocks_*.csv; do python3 $R6/clock_summary.py $f; done | tee $S/clocks_summary.txt
cat $S/log.txt; grep -h "GREEN:\|compile:\|^worst\|FAIL" $S/check_xit.txt | cut -c1-250; sed -n '/^row/,$p' $S/ab.txt; grep -h -A9 "^peer" $S/peers64.txt; grep -h "^target" $S/peers64.txt
