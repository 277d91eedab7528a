#!/usr/bin/env bash
# call 3: the GPU tests on the bundle of the working tree (STREAM_K shipped in the six MMA_PATH=3 profiles, its GPU
# test among them), then evo run on the e4m3 D=128 profile (858 configurations with the knob) and its export
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_CACHE=/tmp/evo-cache-s8 EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c3.tgz -C $S . ; }
p=sdpa_fp8pv_wgmma_d128
timeout 330 bundle/evo_tests --gtest_filter='Gpu*:Ptxas*:Metric*:*SdpaRef*:GreenCompare*' > $S/gpu-tests.txt 2>&1
echo "$(date +%T) gpu-tests rc=$?" >> $S/log.txt; pack
rm -f /tmp/s8run3.db*
timeout 220 bundle/evo --db /tmp/s8run3.db run --profile $p --budget 100 -q > $S/run_$p.txt 2>&1
echo "$(date +%T) run $p rc=$?" >> $S/log.txt
bundle/evo --db /tmp/s8run3.db show-elites --profile $p --top 8 > $S/elites_$p.txt 2>&1
bundle/evo --db /tmp/s8run3.db export best --profile $p --to $S/kernels > $S/export_$p.txt 2>&1; pack
cat $S/log.txt; grep -E "tests ran|PASSED|FAILED|SKIPPED \]" $S/gpu-tests.txt | head -20; grep -h "^best\|evaluations" $S/run_$p.txt | head -5; cat $S/export_$p.txt; head -12 $S/elites_$p.txt
