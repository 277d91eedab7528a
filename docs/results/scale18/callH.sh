#!/usr/bin/env bash
# Call H (nineteenth session, 2 x H200): the new queue worker from a cold compile cache, where its
# claims ahead must grow (three while compiles keep up, one more each time its GPU would wait for
# one, up to its compile slots + 1). sdpa_fp8, 200 evaluations of the exhaustive sweep, each side
# from an empty cache of its own: `--devices 0,1`, then a coordinator and two `evo worker --queue`
# on GPUs 0 and 1; then the same pair again.
# Predicted: both compile-bound (352 compiles of 0.5-2 s over 32 cores: 15-25 s); the queue within
# 0.9-1.05x of --devices 0,1's evaluations a second (its two workers' pools are 2 x 32 processes on
# the same 32 cores); verdicts identical where both measured.
# carry ["bundle.tar.xz", "pgdist.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/h.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
pg=/tmp/pgdist pgdata=/tmp/pgdata port=54329
rm -rf "$pg" "$pgdata"; tar -C /tmp -xJf pgdist.tar.xz
pgbin="$pg/lib/postgresql/$(cat "$pg/VERSION")/bin"
id evopg >/dev/null 2>&1 || useradd -M -s /bin/sh evopg
mkdir -p "$pgdata"; chown evopg "$pgdata"; chmod 700 "$pgdata"
pgenv=(env LD_LIBRARY_PATH="$pg/libs" TZ=GMT LC_ALL=C)
runuser -u evopg -- "${pgenv[@]}" "$pgbin/initdb" -D "$pgdata" -A trust -U evo --locale=C -E UTF8 >$S/initdb.txt 2>&1
runuser -u evopg -- "${pgenv[@]}" "$pgbin/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w \
  -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200" start >$S/pg_ctl.txt 2>&1
log "pg_ctl: rc=$?"
url="postgresql://evo@127.0.0.1:$port/postgres"
for pass in 1 2; do
  export EVO_CACHE=/tmp/h-dev-$pass; rm -rf $EVO_CACHE; rm -f h_dev.db*
  t0=$(date +%s%N)
  bundle/evo --db h_dev.db run --profile sdpa_fp8 --strategy exhaustive --budget 200 --devices 0,1 --no-sanitize -q > $S/run_devices_$pass.txt 2>&1
  rc=$? ms_d=$(( ($(date +%s%N) - t0) / 1000000 ))
  log "--devices 0,1 cold, pass $pass: rc=$rc wall=$ms_d ms; $(grep -E '^run|^time|^pipeline' $S/run_devices_$pass.txt | paste -sd' ' | cut -c1-330)"
  bundle/evo --db h_dev.db export-landscape 1 --to $S/landscape_devices_$pass.json > /dev/null 2>&1
  export EVO_CACHE=/tmp/h-q-$pass; rm -rf $EVO_CACHE; rm -f h_q.db*
  t0=$(date +%s%N)
  bundle/evo --db h_q.db run --profile sdpa_fp8 --strategy exhaustive --budget 200 --queue "$url" --no-sanitize -q > $S/run_queue_$pass.txt 2>&1 &
  coord=$!
  run=""
  for _ in $(seq 600); do
    run=$(sed -n 's/.*start workers with  evo worker .* --run \([0-9]*\)$/\1/p' $S/run_queue_$pass.txt | head -n 1)
    [ -n "$run" ] && break; sleep 0.1
  done
  for g in 0 1; do bundle/evo worker --queue "$url" --run "$run" --device $g --name gpu$g > $S/worker_${pass}_$g.txt 2>&1 & done
  wait $coord; rc=$?
  ms_q=$(( ($(date +%s%N) - t0) / 1000000 ))
  wait
  log "queue cold, pass $pass: rc=$rc wall=$ms_q ms; $(grep -E '^run|^time|^pipeline' $S/run_queue_$pass.txt | paste -sd' ' | cut -c1-330)"
  for g in 0 1; do log "  worker $g: $(tail -n 1 $S/worker_${pass}_$g.txt)"; done
  log "pass $pass: queue/devices evaluations a second: $(awk -v a=$ms_d -v b=$ms_q 'BEGIN { printf "%.3f", a / b }')x"
  bundle/evo --db h_q.db export-landscape 1 --to $S/landscape_queue_$pass.json > /dev/null 2>&1
  python3 scripts/compare-landscapes.py $S/landscape_devices_$pass.json $S/landscape_queue_$pass.json --devices queue | tee -a $S/log.txt
  rm -f $S/landscape_*_$pass.json
  pack
done
runuser -u evopg -- "${pgenv[@]}" "$pgbin/pg_ctl" -D "$pgdata" -m fast stop > /dev/null 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
