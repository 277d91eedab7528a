#!/usr/bin/env bash
# Call E (eighteenth session, 1 x H200; a diagnostic build, not committed): where GREEN's host time goes
# per trial. The build was 1058591 with more StepTimers in gates/green.cpp's trial loop, each adding to
# EVO_GREEN_TIMES's steps: d_where (where_text), d_beat_inputs, d_fill (fill_inputs), d_pack, d_symbols,
# d_ref_find (refs.find), d_poison (poison + refill), d_beat_launch, d_launch_enqueue,
# d_checkwrites_enqueue, d_compare_enqueue, d_sync (the stream's synchronize), d_write_findings.
# Results: README section 6. carry ["bundle.tar.xz"] (that build's bundle).
set -u
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), $(nproc) cores; perf: $(which perf nsys 2>&1 | paste -sd' '); paranoid $(cat /proc/sys/kernel/perf_event_paranoid 2>&1)"
export LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-} EVO_BINARY=$PWD/bundle/evo EVO_CACHE=/tmp/e-cache
bundle/evo compile sdpa_fp8 --all > /dev/null 2>&1
for pass in 1 2; do
  rm -f /tmp/e.db*
  EVO_GREEN_TIMES=$S/g$pass.jsonl bundle/evo --db /tmp/e.db run --profile sdpa_fp8 --strategy exhaustive --budget 1000 --devices 0 --no-sanitize -q > $S/run$pass.txt 2>&1
  log "pass $pass rc=$? $(grep -E '^time' $S/run$pass.txt | cut -c1-150)"
done
tar czf $OUT/e.tgz -C $S .
