#!/usr/bin/env bash
# call 3: the GPU tests on this session's binary (the wgmma-serialisation report and gate among the
# changes), what a serialised wgmma pipeline costs (A/B of the EXP_F16 builds ptxas serialised against the
# one it did not), a compile-only count of serialised wgmma over the three D=128 wgmma spaces (the D=64
# ones were counted here: 0), and evo runs of the two e4m3 P·V profiles at 20 % (D=64) and 30 % (D=128)
# of their spaces, with their exports
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s5 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c3.tgz -C $S . ; }
timeout 240 bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
timeout 120 python3 bench/ab.py docs/results/fa3/h100-s5/rows_c3.json --shapes long,long128 --rounds 5 --json $S/ab_serial.json > $S/ab_serial.txt 2>&1
echo "$(date +%T) ab rc=$?" >> $S/log.txt; pack
for n in sdpa_fp16_wgmma_d128 sdpa_fp8_wgmma_d128 sdpa_fp8pv_wgmma_d128; do
  timeout 150 python3 tests/gpu/sdpa_check.py profiles/$n.json --compile-only --jobs 16 > $S/compile_$n.txt 2>&1
  echo "$(date +%T) compile $n rc=$?" >> $S/log.txt
done; pack
rm -f /tmp/s5run.db*
for pb in sdpa_fp8pv_wgmma:64 sdpa_fp8pv_wgmma_d128:29; do
  p=${pb%%:*}; b=${pb##*:}
  timeout 150 bundle/evo --db /tmp/s5run.db run --profile $p --budget $b -q > $S/run_$p.txt 2>&1
  echo "$(date +%T) run $p rc=$?" >> $S/log.txt
  bundle/evo --db /tmp/s5run.db show-elites --profile $p --top 5 > $S/elites_$p.txt 2>&1
  bundle/evo --db /tmp/s5run.db export best --profile $p --to $S/kernels > $S/export_$p.txt 2>&1
  pack
done
cp /tmp/s5run.db $S/s5run.db; pack
cat $S/log.txt; sed -n '/^row/,$p' $S/ab_serial.txt; grep -E "tests ran|PASSED|FAILED|SKIPPED" $S/gpu-tests.txt | head; grep -h "^compile:" $S/compile_*.txt; grep -h "WGMMA SERIALISED" $S/compile_*.txt | head; grep -h "^best" $S/run_*.txt; cat $S/export_*.txt
