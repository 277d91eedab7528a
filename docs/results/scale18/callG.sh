#!/usr/bin/env bash
# Call G (nineteenth session, 2 x H200): a queue worker killed with SIGKILL mid-run on the GPUs, with
# the new worker (claims held as compiles need, verdicts posted on a thread of their own). A
# coordinator (SQLite store beside the queue) and two `evo worker --queue --lease 5` on GPUs 0 and 1
# sweep sdpa_fp8's 352; after 3 s worker 1 is killed with SIGKILL; a fresh worker takes GPU 1 1 s
# later. Then: the run's count, `evo db check`, each candidate's claims in the queue, and the verdicts
# against a --devices 0,1 run of the same call.
# Predicted: 352 of 352 recorded, db check clean, every queue row done once; the killed worker's
# claims (at most 3 held ahead, plus a measured one not yet posted) taken over once each after their
# 5-s lease (claims = 2 for 1-4 rows); verdicts identical; the run 5-7 s longer than call E's 9 s.
# carry ["bundle.tar.xz", "pgdist.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/g.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo EVO_CACHE=/tmp/g-cache LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
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
bundle/evo compile sdpa_fp8 --all > $S/compile.txt 2>&1; log "compile: $(tail -n 1 $S/compile.txt)"
rm -rf $EVO_CACHE/reference; rm -f g_dev.db*
bundle/evo --db g_dev.db run --profile sdpa_fp8 --strategy exhaustive --budget 1000 --devices 0,1 --no-sanitize -q > $S/run_devices.txt 2>&1
log "--devices 0,1: rc=$? $(grep -E '^run' $S/run_devices.txt)"
bundle/evo --db g_dev.db export-landscape 1 --to $S/landscape_devices.json > /dev/null 2>&1
rm -rf $EVO_CACHE/reference; rm -f g_q.db*
t0=$(date +%s%N)
bundle/evo --db g_q.db run --profile sdpa_fp8 --strategy exhaustive --budget 1000 --queue "$url" --no-sanitize -q > $S/run_queue.txt 2>&1 &
coord=$!
run=""
for _ in $(seq 600); do
  run=$(sed -n 's/.*start workers with  evo worker .* --run \([0-9]*\)$/\1/p' $S/run_queue.txt | head -n 1)
  [ -n "$run" ] && break; sleep 0.1
done
log "queue run $run"
bundle/evo worker --queue "$url" --run "$run" --device 0 --name gpu0 --lease 5 > $S/worker_0.txt 2>&1 &
w0=$!
bundle/evo worker --queue "$url" --run "$run" --device 1 --name gpu1 --lease 5 > $S/worker_1.txt 2>&1 &
w1=$!
sleep 3
pkill -KILL -P $w1 2>/dev/null; kill -KILL $w1; log "worker gpu1 (pid $w1) killed with SIGKILL"
sleep 1
bundle/evo worker --queue "$url" --run "$run" --device 1 --name gpu1b --lease 5 > $S/worker_1b.txt 2>&1 &
wait $coord; rc=$?
log "queue run: rc=$rc wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep -E '^run' $S/run_queue.txt)"
wait
for w in 0 1 1b; do log "worker $w: $(tail -n 1 $S/worker_$w.txt)"; done
bundle/evo --db g_q.db db check > $S/db_check.txt 2>&1; log "db check: rc=$? $(tail -n 2 $S/db_check.txt | paste -sd' ')"
log "queue rows: $(runuser -u evopg -- "${pgenv[@]}" "$pgbin/psql" -h 127.0.0.1 -p $port -U evo -d postgres -Atc \
  "SELECT state, claims, count(*) FROM work_queue WHERE run_id = $run GROUP BY 1, 2 ORDER BY 1, 2" | paste -sd' ')"
bundle/evo --db g_q.db export-landscape 1 --to $S/landscape_queue.json > /dev/null 2>&1
python3 scripts/compare-landscapes.py $S/landscape_devices.json $S/landscape_queue.json --devices queue | tee -a $S/log.txt
rm -f $S/landscape_*.json
runuser -u evopg -- "${pgenv[@]}" "$pgbin/pg_ctl" -D "$pgdata" -m fast stop > /dev/null 2>&1
log "done after $(( $(date +%s) - T0 )) s"; pack
