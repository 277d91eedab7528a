#!/usr/bin/env bash
# Runs on the GPU machine (through the device tool, carry ["bundle"], from the repository root):
# the GPU tests, then `evo run --budget 200` from an empty database and cold compile cache, the
# identical second run, show-elites / export / db check, and the rest of the sdpa_fp8 space
# (exhaustive) exported as a landscape. Everything it prints and writes lands in $OUT (the
# device tool brings it back), step by step, so a run cut short still returns what it did.
#   scripts/bundle.sh                       # here
#   scripts/gpu-session.sh [tests] [run] [landscape] [examples] [wgmma] [pershape] [retorch] [d128] [fa3] [fa3ncu] [fa3ab] [fa3run]   # there; no argument = the first three
# retorch: export from bundle/pershape.db (an earlier pershape step's, carried in the bundle) and run
# tests/gpu/torch_check.py on it.
# pershape: a kernel per shape (issue 19): `evo run --objective` over the two Hopper wgmma profiles,
# show-elites, `export best --dispatch --torch`, then tests/gpu/torch_check.py (the PyTorch module
# against SDPA, timed beside cuDNN).
# d128: the head-size-128 profiles (issue 18): the whole space of each through tests/gpu/sdpa_check.py
# (NVRTC + ptxas spills, every configuration on every problem against SDPA), then `evo run` on each
# (objective long) and the best exported into $OUT/kernels_d128.
# wgmma: `evo run` over the two Hopper wgmma profiles (sdpa_fp16_wgmma, sdpa_fp8_wgmma) through the
# worker, whole space each, its own database, then show-elites and export.
set -uo pipefail
# The device tool brings back at most 8 files from $OUT: the steps write three folders down (which it
# never returns one by one) and every step repacks them into $BACK/session.tgz, so a call cut short by
# its time limit still returns all it did (the last one of 2026-11-25 lost its test log that way).
BACK="${OUT:-/tmp/evo-out}"
export OUT="$BACK/steps/of/session"
mkdir -p "$OUT"
pack() {  # (tar writes outside $OUT first: writing into the folder it reads fails with "file changed")
  (cd "$OUT" && tar czf /tmp/evo-session.tgz --exclude=evo.db --exclude='landscape_*.json' . &&
    mv /tmp/evo-session.tgz "$BACK/session.tgz")
}
export EVO_BINARY="$PWD/bundle/evo"
# The bundled libraries' own dependencies (libpq's Kerberos, LDAP) are not found through RUNPATH.
export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}"
export EVO_CACHE="${EVO_CACHE:-/tmp/evo-cache-$$}"
steps="${*:-tests run landscape}"
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$BACK/session.log"; }
timed() {  # timed NAME CMD...: output to $OUT/NAME.txt, wall seconds to the session log
  local name="$1"; shift
  local t0; t0=$(date +%s%N)
  "$@" >"$OUT/$name.txt" 2>&1
  local rc=$?
  log "$name: rc=$rc wall=$(( ($(date +%s%N) - t0) / 1000000 )) ms"
  tail -n 25 "$OUT/$name.txt"
  pack
  return 0
}
log "device: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
if [[ " $steps " == *" tests "* ]]; then
  timed gpu-tests scripts/gpu-tests.sh bundle/evo_tests  # (it puts bundle/lib on LD_LIBRARY_PATH)
fi
if [[ " $steps " == *" run "* ]]; then
  rm -f evo.db evo.db-wal evo.db-shm
  timed run1 bundle/evo run --profile sdpa_fp8 --budget 200
  timed run2 bundle/evo run --profile sdpa_fp8 --budget 200
  timed elites bundle/evo show-elites --top 5 --lineage
  timed export bundle/evo export best --to "$OUT/kernels"
  timed dbcheck bundle/evo db check
fi
if [[ " $steps " == *" examples "* ]]; then
  # The example profiles of docs/profiles.md: an inout accumulator, a two-launch reduction, a
  # kernel checked by a NumPy script (python3 with NumPy on PATH).
  for prof in accumulate reduce_sum stencil3; do
    timed "eval_$prof" bundle/evo --db "$OUT/examples.db" eval "$prof" --baseline
  done
fi
if [[ " $steps " == *" wgmma "* ]]; then
  for prof in sdpa_fp16_wgmma sdpa_fp8_wgmma; do
    (mkdir -p "wg_$prof" && cd "wg_$prof" && rm -f evo.db* &&
      timed "run_$prof" ../bundle/evo run --profile "../profiles/$prof.json" --budget 50 &&
      timed "elites_$prof" ../bundle/evo show-elites --top 5 &&
      timed "export_$prof" ../bundle/evo export best --to "$OUT/kernels_$prof")
  done
fi
if [[ " $steps " == *" pershape "* ]]; then
  mkdir -p pershape && rm -f pershape/evo.db*
  db=pershape/evo.db
  timed pershape_fp16 bundle/evo --db "$db" run --profile sdpa_fp16_wgmma --objective "${EVO_PERSHAPE_FP16:-all}" \
    --budget "${EVO_PERSHAPE_BUDGET:-24}" -q
  timed pershape_fp8 bundle/evo --db "$db" run --profile sdpa_fp8_wgmma \
    --objective "${EVO_PERSHAPE_FP8:-mission,mission512,long}" --budget "${EVO_PERSHAPE_BUDGET:-24}" -q
  timed pershape_runs bundle/evo --db "$db" runs
  for prof in sdpa_fp16_wgmma sdpa_fp8_wgmma; do
    timed "pershape_elites_$prof" bundle/evo --db "$db" show-elites --profile "$prof" --top 3
    timed "pershape_export_$prof" bundle/evo --db "$db" export best --profile "$prof" --dispatch --torch --to "$OUT/pershape"
  done
  timed torch_check python3 tests/gpu/torch_check.py "$OUT/pershape" --out "$OUT/torch_check.json"
  cp "$db" "$OUT/pershape.db"
fi
if [[ " $steps " == *" retorch "* ]]; then
  # The PyTorch check again, on the exports of an earlier pershape step's database (bundle/pershape.db).
  for prof in sdpa_fp16_wgmma sdpa_fp8_wgmma; do
    timed "retorch_export_$prof" bundle/evo --db bundle/pershape.db export best --profile "$prof" --dispatch --torch --to "$OUT/pershape"
  done
  timed torch_check python3 tests/gpu/torch_check.py "$OUT/pershape" --out "$OUT/torch_check.json"
fi
if [[ " $steps " == *" d128 "* ]]; then
  timed d128_check python3 tests/gpu/sdpa_check.py profiles/sdpa_fp16_wgmma_d128.json profiles/sdpa_fp8_wgmma_d128.json \
    --time 8 --json "$OUT/d128_check.json"
  mkdir -p d128 && rm -f d128/evo.db*
  for prof in sdpa_fp16_wgmma_d128 sdpa_fp8_wgmma_d128; do
    timed "d128_run_$prof" bundle/evo --db d128/evo.db run --profile "$prof" --budget "${EVO_D128_BUDGET:-40}" -q
    timed "d128_elites_$prof" bundle/evo --db d128/evo.db show-elites --profile "$prof" --top 5
    timed "d128_export_$prof" bundle/evo --db d128/evo.db export best --profile "$prof" --to "$OUT/kernels_d128"
  done
  cp d128/evo.db "$OUT/d128.db"
fi
if [[ " $steps " == *" fa3 "* ]]; then
  # FlashAttention-3 (MMA_PATH=3) at head size 128. Per profile (EVO_FA3_PROFILES, default the three
  # D=128 ones): one configuration of the slice on every problem first, under a timeout (a deadlock in
  # a barrier protocol would hang the sweep), then every configuration of the slice (EVO_FA3_ONLY,
  # default MMA_PATH=3) against SDPA with the per-problem error, then the fastest of all side by side
  # with the peers (EVO_FA3_PEERS=0 skips them).
  export PYTHONUNBUFFERED=1
  bests=()
  for prof in ${EVO_FA3_PROFILES:-sdpa_fp16_wgmma_d128 sdpa_fp8_wgmma_d128 sdpa_fp8pv_wgmma_d128}; do
    timed "fa3_smoke_$prof" timeout 90 python3 tests/gpu/sdpa_check.py "profiles/$prof.json" \
      --only "${EVO_FA3_ONLY:-MMA_PATH=3}" --limit 1 --time 1 --json "$OUT/fa3_smoke_$prof.json"
    grep -q "GREEN: 1 pass" "$OUT/fa3_smoke_$prof.txt" || continue
    timed "fa3_check_$prof" timeout "${EVO_FA3_TIMEOUT:-200}" python3 tests/gpu/sdpa_check.py "profiles/$prof.json" \
      --only "${EVO_FA3_ONLY:-MMA_PATH=3}" --time 4 --json "$OUT/fa3_check_$prof.json"
    [ -s "$OUT/fa3_check_$prof.json" ] && bests+=(--best "$OUT/fa3_check_$prof.json")
  done
  if [ "${EVO_FA3_PEERS:-1}" = 1 ] && [ ${#bests[@]} -gt 0 ]; then
    timed fa3_peers timeout 240 python3 bench/peers.py --shapes long128,prefill128,long128_causal \
      "${bests[@]}" --rounds "${EVO_FA3_ROUNDS:-3}" --out "$OUT/fa3_peers.json"
  fi
fi
if [[ " $steps " == *" fa3ncu "* ]]; then
  # ncu's view of one launch of each peer at head size 128 (evo: EVO_NCU_FP16 / EVO_NCU_FP8, knob specs of
  # the D=128 profiles): tensor-pipe and issue utilisation, warp stalls, occupancy.
  ncu_args=(--fp16-profile profiles/sdpa_fp16_wgmma_d128.json --fp8-profile "profiles/${EVO_NCU_FP8_PROFILE:-sdpa_fp8pv_wgmma_d128}.json")
  [ -n "${EVO_NCU_FP16:-}" ] && ncu_args+=(--fp16 "$EVO_NCU_FP16")
  [ -n "${EVO_NCU_FP8:-}" ] && ncu_args+=(--fp8 "$EVO_NCU_FP8")
  timed fa3_ncu timeout 300 ncu --profile-from-start off --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats \
    python3 bench/peers.py --shapes "${EVO_NCU_SHAPES:-long128}" "${ncu_args[@]}" --profile-once
fi
if [[ " $steps " == *" fa3ab "* ]]; then
  # FlashAttention-3 variants side by side (bench/rows/fa3_d128.json: PERSIST x PINGPONG x WG_PIPE),
  # then ncu's warp-stall breakdown of two of them (bench/rows/fa3_d128_ncu.json).
  export PYTHONUNBUFFERED=1
  timed fa3_ab timeout 300 python3 bench/ab.py "${EVO_AB_ROWS:-bench/rows/fa3_d128.json}" \
    --shapes "${EVO_AB_SHAPES:-long128,prefill128,long128_causal,tail128,tail128_causal}" --rounds "${EVO_AB_ROUNDS:-5}" --json "$OUT/fa3_ab.json"
  timed fa3_stalls timeout 200 ncu --profile-from-start off --section WarpStateStats --section ComputeWorkloadAnalysis \
    --section InstructionStats --print-details all \
    python3 bench/ab.py bench/rows/fa3_d128_ncu.json --shapes long128 --profile-once
fi
if [[ " $steps " == *" fa3run "* ]]; then
  # evo itself on the FlashAttention-3 profiles at head size 128 (objective long): a search each
  # (budget EVO_FA3_BUDGET), the elites, and the best exported into $OUT/kernels_fa3.
  mkdir -p fa3run && rm -f fa3run/evo.db*
  for prof in ${EVO_FA3_RUN_PROFILES:-sdpa_fp16_wgmma_d128 sdpa_fp8_wgmma_d128 sdpa_fp8pv_wgmma_d128}; do
    timed "fa3run_$prof" bundle/evo --db fa3run/evo.db run --profile "$prof" --budget "${EVO_FA3_BUDGET:-30}" -q
    timed "fa3run_elites_$prof" bundle/evo --db fa3run/evo.db show-elites --profile "$prof" --top 5
    timed "fa3run_export_$prof" bundle/evo --db fa3run/evo.db export best --profile "$prof" --to "$OUT/kernels_fa3"
  done
  cp fa3run/evo.db "$OUT/fa3run.db"
fi
if [[ " $steps " == *" landscape "* ]]; then
  timed exhaustive bundle/evo run --strategy exhaustive --budget 400 --no-sanitize
  run_id=$(bundle/evo runs 2>/dev/null | awk '$0 ~ /exhaustive/ {print $1}' | tail -n 1)
  timed runs bundle/evo runs
  timed landscape bundle/evo export-landscape "${run_id:-3}" --to "$BACK/landscape_sdpa_fp8_h100.json"
fi
cp evo.db "$BACK/evo.db" 2>/dev/null
log "done"
pack
