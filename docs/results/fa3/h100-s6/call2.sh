#!/usr/bin/env bash
# call 2: where a step's clocks go — bench/timeline.py (SDPA_TRACE stamps) on the fastest D=128 and D=64
# configurations, the same rows untimed-traced in bench/ab.py, and the SM clock, power and throttle reasons
# sampled every 200 ms while ab.py runs (is the rounds' spread the clock?)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c2.tgz -C $S . ; }
R=docs/results/fa3/h100-s6
timeout 120 python3 bench/timeline.py $R/rows_c2.json --shape long128 --json $S/timeline128.json > $S/timeline128.txt 2>&1
echo "$(date +%T) timeline128 rc=$?" >> $S/log.txt
timeout 90 python3 bench/timeline.py $R/rows_c2.json --shape long --json $S/timeline64.json > $S/timeline64.txt 2>&1
echo "$(date +%T) timeline64 rc=$?" >> $S/log.txt; gzip $S/timeline*.json; pack
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.max.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 200 > $S/clocks.csv 2>&1 &
SMI=$!
timeout 200 python3 bench/ab.py $R/rows_c2.json --shapes long,long128 --rounds 5 --json $S/ab.json > $S/ab.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt
kill $SMI; pack
cat $S/log.txt; sed -n '/^row (SM/,$p' $S/timeline128.txt $S/timeline64.txt; sed -n '/^row/,$p' $S/ab.txt
python3 - $S/clocks.csv <<'PY'
import sys, collections
rows = [l.strip().split(", ") for l in open(sys.argv[1]) if l[0].isdigit()]
clk = [int(r[1].split()[0]) for r in rows if r[1].split()[0].isdigit()]
pw = [float(r[3].split()[0]) for r in rows if r[3].split()[0].replace(".", "").isdigit()]
thr = collections.Counter(r[5] for r in rows)
if clk: print("SM clock MHz: min %d median %d max %d over %d samples; power W: median %.0f max %.0f; throttle reasons: %s"
              % (min(clk), sorted(clk)[len(clk) // 2], max(clk), len(clk), sorted(pw)[len(pw) // 2], max(pw), dict(thr.most_common(4))))
PY
