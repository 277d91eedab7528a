#!/usr/bin/env bash
# call 2: complete landscapes of the two e4m3 P·V profiles (exhaustive evo runs, one GPU), for the
# search-quality replays of "the search on the flat top" (docs/results/sdpa-fa3.md)
export PYTHONUNBUFFERED=1; S=$OUT/s; mkdir -p $S
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}" EVO_BINARY="$PWD/bundle/evo"
echo "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)" > $S/log.txt
pack() { tar czf $OUT/c2.tgz -C $S . ; }
for p in sdpa_fp8pv_wgmma_d128 sdpa_fp8pv_wgmma; do
  work=$(mktemp -d)
  timeout 400 bundle/evo --db $work/evo.db --cache $work/cache run --profile $p --strategy exhaustive --budget 100000 --no-sanitize > $S/run_$p.txt 2>&1
  echo "$(date +%T) $p exhaustive rc=$?" >> $S/log.txt
  bundle/evo --db $work/evo.db export-landscape 1 --to $S/landscape_${p}_h100.json >> $S/log.txt 2>&1
  pack
done
cat $S/log.txt; for p in sdpa_fp8pv_wgmma_d128 sdpa_fp8pv_wgmma; do tail -4 $S/run_$p.txt; done
