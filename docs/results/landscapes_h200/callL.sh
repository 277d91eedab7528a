#!/usr/bin/env bash
# Call L (twenty-fourth session, 1 x H200, the only kind lent; carry ["bundle.tar.xz",
# "examples/kernel_tuner/kernels"], bundle with evo_tests at f510da6's code: jump_count=measured).
# Part 1 (PART=tests): every GPU test (scripts/gpu-tests.sh) at the new default.
# Part 2 (PART=live): the README's main job from cold, then Kernel Tuner's convolution example live,
#   55 evaluations (the top of its score's range), seeds 0-3 and 10, the new rule and the old
#   (-o jump_count=proposed), one compile cache for all ten runs.
# Prediction: (1) 132 run, 126 passed, 6 skipped (call H's figures; no GPU code changed). (2) main
# job about 17 s, 200 evaluations, best within 5 % of call H's; the convolution runs: every run's best
# within 10 % of the landscape's best (390 us, tests/data/held_out/landscape_kt_convolution_h200.json),
# jumps labelled "stall" in both rules; over five seeds the two rules' bests differ by no more than
# the seeds do (the replay's difference is a 100-seed one).
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/l.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
if [ "${PART:-tests}" = tests ]; then
  EVO_CACHE=/tmp/l-tests timeout 480 bash scripts/gpu-tests.sh bundle/evo_tests > $S/tests.txt 2>&1
  log "gpu tests: rc=$? after $(( $(date +%s) - T0 )) s"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? from .* ran' $S/tests.txt | tail -n 12 | tee -a $S/log.txt
  pack; exit 0
fi
export EVO_CACHE=/tmp/l-main; rm -rf $EVO_CACHE /tmp/l-main-run; mkdir -p /tmp/l-main-run
t=$(date +%s%N)
(cd /tmp/l-main-run && $OLDPWD/bundle/evo run --budget 200 > $S/main_run.txt 2>&1); rc=$?
log "main job: rc=$rc wall=$(( ($(date +%s%N) - t) / 1000000 )) ms; $(grep -E '^run|^best|^time' $S/main_run.txt | tail -3 | paste -sd' ' | cut -c1-400)"
export EVO_CACHE=/tmp/l-conv; rm -rf $EVO_CACHE
for seed in 0 1 2 3 10; do
  for rule in measured proposed; do
    db=$S/conv_${rule}_${seed}.db; rm -f $db
    t=$(date +%s%N)
    timeout 150 bundle/evo --db $db run --profile examples/kernel_tuner/convolution.json --budget 55 --seed $seed --no-sanitize --no-metrics -q -o jump_count=$rule > $S/conv_${rule}_${seed}.txt 2>&1
    log "conv seed $seed $rule: rc=$? wall=$(( ($(date +%s%N) - t) / 1000000 )) ms; $(grep -E '^best' $S/conv_${rule}_${seed}.txt | head -1 | cut -c1-200)"
  done
  pack
done
log "done after $(( $(date +%s) - T0 )) s"; pack
