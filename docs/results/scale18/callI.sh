#!/usr/bin/env bash
# Call I (nineteenth session, 2 x H200): call H found the queue at 0.73-0.75x of --devices 0,1 from
# a cold cache. Its rule shrank the claims ahead whenever more than two were compiled and waiting,
# which a cold pool's bursts of finished compiles trigger while others are still in flight; now it
# shrinks only when everything in hand is compiled. Here, from empty caches, sdpa_fp8's first 200 of
# the exhaustive sweep, twice: --devices 0,1; the queue with this build; the queue with the build of
# 286e996 (33 claims each from the start: bundle/evo_old). Then one warm pair (scripts/gpu-queue.sh
# as in calls E and F) with this build.
# Predicted: this build's cold queue 0.85-1.0x of --devices 0,1 (as the old build's, whose 33 claims
# keep both pools full from the start; call H's 0.73-0.75x was the shrinking); warm 0.93-1.0x.
# carry ["bundle.tar.xz", "pgdist.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/i.tgz -C $S . ; }
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
queue_run() {  # binary tag pass: a coordinator and two workers of that binary, from an empty cache
  local bin=$1 tag=$2 pass=$3
  export EVO_BINARY=$PWD/bundle/$bin EVO_CACHE=/tmp/i-$tag-$pass; rm -rf $EVO_CACHE; rm -f i_$tag.db*
  local t0=$(date +%s%N)
  bundle/$bin --db i_$tag.db run --profile sdpa_fp8 --strategy exhaustive --budget 200 --queue "$url" --no-sanitize -q > $S/run_${tag}_$pass.txt 2>&1 &
  local coord=$! run=""
  for _ in $(seq 600); do
    run=$(sed -n 's/.*start workers with  evo worker .* --run \([0-9]*\)$/\1/p' $S/run_${tag}_$pass.txt | head -n 1)
    [ -n "$run" ] && break; sleep 0.1
  done
  for g in 0 1; do bundle/$bin worker --queue "$url" --run "$run" --device $g --name gpu$g > $S/worker_${tag}_${pass}_$g.txt 2>&1 & done
  wait $coord; local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  wait
  log "$tag cold, pass $pass: rc=$rc wall=$ms ms ($(awk -v a=$ms_d -v b=$ms 'BEGIN { printf "%.3f", a / b }')x --devices 0,1); $(grep -E '^time' $S/run_${tag}_$pass.txt | cut -c1-200)"
  log "  workers: $(tail -q -n 1 $S/worker_${tag}_${pass}_0.txt $S/worker_${tag}_${pass}_1.txt | paste -sd' ')"
  export EVO_BINARY=$PWD/bundle/evo
}
for pass in 1 2; do
  export EVO_CACHE=/tmp/i-dev-$pass; rm -rf $EVO_CACHE; rm -f i_dev.db*
  t0=$(date +%s%N)
  bundle/evo --db i_dev.db run --profile sdpa_fp8 --strategy exhaustive --budget 200 --devices 0,1 --no-sanitize -q > $S/run_devices_$pass.txt 2>&1
  rc=$? ms_d=$(( ($(date +%s%N) - t0) / 1000000 ))
  log "--devices 0,1 cold, pass $pass: rc=$rc wall=$ms_d ms; $(grep -E '^time' $S/run_devices_$pass.txt | cut -c1-200)"
  if [ $pass = 1 ]; then queue_run evo new $pass; queue_run evo_old old $pass; else queue_run evo_old old $pass; queue_run evo new $pass; fi
  pack
done
runuser -u evopg -- "${pgenv[@]}" "$pgbin/pg_ctl" -D "$pgdata" -m fast stop > /dev/null 2>&1
export EVO_CACHE=/tmp/i-warm
OUT=$S/warm timeout 200 bash scripts/gpu-queue.sh sdpa_fp8 1000 > /dev/null 2>&1
log "warm pair: rc=$?"; grep -E "queue/devices|worker [01]:|verdicts" $S/warm/session.log | cut -c1-200 | tee -a $S/log.txt
rm -f $S/warm/landscape_*.json
log "done after $(( $(date +%s) - T0 )) s"; pack
