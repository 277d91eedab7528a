#!/usr/bin/env bash
# Call O (twenty-sixth session, 1 x H200; carry ["bundle.tar.xz"], bundled with the new default
# jump_repair=flags). The new default against the old (-o jump_repair=off) live, on sdpa_fp8_wgmma_d128
# (recorded in call N), 29 evaluations each (the top of its score's range), seeds 6, 20 and 34:
# the seeds whose replays part (tests/data/held_out/landscape_sdpa_fp8_wgmma_d128_h200.json: the old
# rule ends at 586 us, 1.36x the best, in all three; the new at 431.5-432.5 us). One compile cache for
# all six runs; live timings differ from the recorded ones by about 1 %, so a live run follows its
# replay only until the model's first choice that a timing tips.
# Prediction: the new rule within 5 % of 431.5 us in at least two of the three; the old 1.3x or more
# off in at least two. Each run about 40-80 s (29 timings of about 1 s, GREEN on six problems, compiles).
set -u
T0=$(date +%s)
tar xJf bundle.tar.xz
S=$OUT/o; mkdir -p $S
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_CACHE=/tmp/o-cache; rm -rf $EVO_CACHE
for seed in 6 20 34; do
  for rule in flags off; do
    db=$S/fp8wd128_${rule}_${seed}.db; rm -f $db
    t=$(date +%s%N)
    timeout 90 bundle/evo --db $db run --profile sdpa_fp8_wgmma_d128 --budget 29 --seed $seed --no-sanitize --no-metrics -q -o jump_repair=$rule > $S/run_${rule}_${seed}.txt 2>&1
    log "seed $seed $rule: rc=$? wall=$(( ($(date +%s%N) - t) / 1000000 )) ms; $(grep -E '^best' $S/run_${rule}_${seed}.txt | head -1 | cut -c1-60)"
  done
done
log "done after $(( $(date +%s) - T0 )) s"
tar czf $OUT/o.tgz -C $S .
