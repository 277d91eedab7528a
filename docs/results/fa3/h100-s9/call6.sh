#!/usr/bin/env bash
# call 6: the GPU tests on the bundle (the template of this pass), then `evo run` of the two D=128 profiles whose
# exports this pass replaces (fp16 at 17 % of its space, e4m3 P·V at 12 %), their elites and exports
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s9 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c6.tgz -C $S . ; }
timeout 330 bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
run() {  # profile, budget, timeout
  rm -f /tmp/s9_$1.db*
  timeout $3 bundle/evo --db /tmp/s9_$1.db run --profile $1 --budget $2 -q > $S/run_$1.txt 2>&1
  echo "$(date +%T) run $1 rc=$?" >> $S/log.txt
  bundle/evo --db /tmp/s9_$1.db show-elites --profile $1 --top 8 > $S/elites_$1.txt 2>&1
  bundle/evo --db /tmp/s9_$1.db export best --profile $1 --to $S/kernels > $S/export_$1.txt 2>&1; pack
}
run sdpa_fp16_wgmma_d128 40 100
run sdpa_fp8pv_wgmma_d128 100 160
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED|SKIPPED \]" $S/gpu-tests.txt | head -20; grep -h "^best\|evaluations" $S/run_*.txt | head -8; cat $S/export_*.txt; head -12 $S/elites_*.txt
