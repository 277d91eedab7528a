#!/usr/bin/env bash
# call 6: what the softmax's 1 700-2 100 clocks are made of — bench/timeline.py on timing-only copies of the
# template (.sass/s6/sdpa_<v>.cu, wrong results by design): nomax (the row max tree left out), noexp (no
# ex2: P = the exponent itself), nosum (no row sums), noshfl (no shuffles for the row max)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
R=docs/results/fa3/h100-s6
timeout 200 python3 bench/timeline.py $R/rows_c6.json --shape long128 --json $S/timeline_c6.json > $S/timeline_c6.txt 2>&1
echo "rc=$?" >> $S/timeline_c6.txt; gzip $S/timeline_c6.json
sed -n '/^row (SM/,$p' $S/timeline_c6.txt
