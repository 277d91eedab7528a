#!/usr/bin/env bash
# Runs on a machine with two or more GPUs and no PostgreSQL (device tool, carry ["bundle",
# "pgdist.tar.xz"]; scripts/bundle.sh and scripts/pg-dist.sh here first), from the repository root:
# the same exhaustive sweep of one profile measured by `evo run --devices 0,1` (one host, its own
# per-GPU workers) and by a coordinator with two `evo worker --queue` processes on GPUs 0 and 1
# against a throwaway PostgreSQL server started here from pgdist.tar.xz (initdb as an unprivileged
# user). Same warm compile cache, reference store emptied before each, fresh databases. Prints each
# one's evaluations per second and their ratio (issue 35: the queue >= 0.9x), then compares the two
# runs' verdicts and medians configuration by configuration.
#   scripts/gpu-queue.sh [PROFILE] [BUDGET]        # default sdpa_fp8, its whole space
set -uo pipefail
OUT="${OUT:-/tmp/evo-out}"; mkdir -p "$OUT"
export EVO_BINARY="$PWD/bundle/evo" EVO_CACHE="${EVO_CACHE:-/tmp/evo-cache-queue}"
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}"
prof="${1:-sdpa_fp8}" budget="${2:-1000}"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$OUT/session.log"; }

# The server: unpacked where an unprivileged user can read it (initdb refuses root).
pg=/tmp/pgdist pgdata=/tmp/pgdata port=54329
rm -rf "$pg" "$pgdata"; tar -C /tmp -xJf pgdist.tar.xz
ver=$(cat "$pg/VERSION") pgbin="$pg/lib/postgresql/$(cat "$pg/VERSION")/bin"
as_user=()
if [ "$(id -u)" = 0 ]; then
  id evopg >/dev/null 2>&1 || useradd -M -s /bin/sh evopg 2>/dev/null || true
  u=evopg; id evopg >/dev/null 2>&1 || u=nobody
  mkdir -p "$pgdata"; chown "$u" "$pgdata"; chmod 700 "$pgdata"
  as_user=(runuser -u "$u" --)
fi
pgenv=(env LD_LIBRARY_PATH="$pg/libs" TZ=GMT LC_ALL=C)
"${as_user[@]}" "${pgenv[@]}" "$pgbin/initdb" -D "$pgdata" -A trust -U evo --locale=C -E UTF8 >"$OUT/initdb.txt" 2>&1 ||
  { log "initdb failed (PostgreSQL $ver): $(tail -n 3 "$OUT/initdb.txt" | paste -sd' ')"; exit 1; }
"${as_user[@]}" "${pgenv[@]}" "$pgbin/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w \
  -o "-p $port -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200" start >"$OUT/pg_ctl.txt" 2>&1 ||
  { log "pg_ctl start failed: $(tail -n 3 "$OUT/pg_ctl.txt" | paste -sd' '); $(tail -n 5 "$pgdata/server.log" 2>/dev/null | paste -sd' ')"; exit 1; }
trap '"${as_user[@]}" "${pgenv[@]}" "$pgbin/pg_ctl" -D "$pgdata" -m fast stop >/dev/null 2>&1' EXIT
url="postgresql://evo@127.0.0.1:$port/postgres"
log "PostgreSQL $ver up on port $port (initdb and server as ${as_user[2]:-$(id -un)})"

t0=$(date +%s%N); bundle/evo compile "$prof" --all >"$OUT/compile.txt" 2>&1
log "warm compile cache: $(( ($(date +%s%N) - t0) / 1000000 )) ms, $(tail -n 1 "$OUT/compile.txt")"
new_of() { grep -oE '^run [0-9]+ [a-z]+ \([^)]*\): [0-9]+ new' "$1" | grep -oE '[0-9]+ new' | grep -oE '[0-9]+'; }

# One host, two GPUs.
rm -f q_devices.db*; rm -rf "$EVO_CACHE/reference"
t0=$(date +%s%N)
bundle/evo --db q_devices.db run --profile "$prof" --strategy exhaustive --budget "$budget" --devices 0,1 \
  --no-sanitize -q >"$OUT/run_devices.txt" 2>&1
rc=$? ms_d=$(( ($(date +%s%N) - t0) / 1000000 )) n_d=$(new_of "$OUT/run_devices.txt")
log "--devices 0,1: rc=$rc wall=$ms_d ms, ${n_d:-0} new; $(grep -E '^run|^pipeline|^time' "$OUT/run_devices.txt" | paste -sd' ')"
bundle/evo --db q_devices.db export-landscape 1 --to "$OUT/landscape_devices.json" >/dev/null 2>&1

# A coordinator and two queue workers, each on its GPU, through the server.
rm -f q_queue.db*; rm -rf "$EVO_CACHE/reference"
t0=$(date +%s%N)
bundle/evo --db q_queue.db run --profile "$prof" --strategy exhaustive --budget "$budget" --queue "$url" \
  --no-sanitize -q >"$OUT/run_queue.txt" 2>&1 &
coord=$!
run=""
for _ in $(seq 600); do
  run=$(sed -n 's/.*start workers with  evo worker .* --run \([0-9]*\)$/\1/p' "$OUT/run_queue.txt" | head -n 1)
  [ -n "$run" ] && break
  kill -0 "$coord" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$run" ]; then
  log "the coordinator did not open its queue run: $(tail -n 5 "$OUT/run_queue.txt" | paste -sd' ')"; exit 1
fi
for g in 0 1; do
  bundle/evo worker --queue "$url" --run "$run" --device "$g" --name "gpu$g" >"$OUT/worker_$g.txt" 2>&1 &
done
wait "$coord"; rc=$?
ms_q=$(( ($(date +%s%N) - t0) / 1000000 )) n_q=$(new_of "$OUT/run_queue.txt")
wait
log "queue, 2 workers: rc=$rc wall=$ms_q ms, ${n_q:-0} new; $(grep -E '^run|^pipeline|^time' "$OUT/run_queue.txt" | paste -sd' ')"
for g in 0 1; do log "worker $g: $(tail -n 2 "$OUT/worker_$g.txt" | paste -sd' ')"; done
bundle/evo --db q_queue.db export-landscape 1 --to "$OUT/landscape_queue.json" >/dev/null 2>&1
log "$prof: queue/devices evaluations a second: $(awk -v a="${n_d:-0}" -v ta="$ms_d" -v b="${n_q:-0}" -v tb="$ms_q" \
  'BEGIN { ra = 1000 * a / ta; rb = 1000 * b / tb; printf "%.3f / %.3f = %.3fx", rb, ra, rb / ra }')"
python3 scripts/compare-landscapes.py "$OUT/landscape_devices.json" "$OUT/landscape_queue.json" --devices queue | tee -a "$OUT/session.log"
