#!/usr/bin/env bash
# Call G (twenty-first session, 1 x H200; carry ["bundle.tar.xz", "bundle_old.tar.xz"]): one GPU's
# evaluations a second, this session's build against scale18's (286e996, the last build whose rates
# were measured), side by side in one call: call F's rates (gemm_fp16 76.3, sdpa_fp8 21.9) could not
# be set against scale18 call C's (92.0, 24.3: another host, 64 cores, the pool's warm workers).
# Both builds alike: no pool, scripts/gpu-devices.sh PROF 1000 "0" 1, the builds taking turns
# (new, old) three times per profile, each build with a warm compile cache of its own.
# Prediction: the two builds within 3 % of each other on both profiles (the medians' ratio 0.97-1.03):
# no code on a candidate's path changed between them but the memory bounds, which only keep more.
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
REPO=$PWD
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/g.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
for b in new old; do
  mkdir -p /tmp/g-$b && (cd /tmp/g-$b && tar xJf $REPO/$( [ $b = new ] && echo bundle.tar.xz || echo bundle_old.tar.xz ) && ln -sfn $REPO/scripts scripts)
done
for prof in gemm_fp16 sdpa_fp8; do
  for r in 1 2 3; do
    for b in new old; do
      (cd /tmp/g-$b && OUT=$S/$prof-$b-$r EVO_CACHE=/tmp/g-cache-$b-$prof bash scripts/gpu-devices.sh $prof 1000 "0" 1 > /dev/null 2>&1)
      log "$prof $b run $r: $(grep -oE '[0-9.]+ evaluations/s' $S/$prof-$b-$r/session.log | head -1); $(grep -oE 'time: [^;]*' $S/$prof-$b-$r/session.log | head -1)"
      rm -f $S/$prof-$b-$r/devices.tgz
    done
  done
  pack
done
python3 - "$S/log.txt" <<'PY' | tee -a $S/log.txt
import re, sys, statistics as st
rates = {}
for l in open(sys.argv[1]):
    m = re.search(r'(\S+) (new|old) run \d: ([0-9.]+) evaluations/s', l)
    if m: rates.setdefault((m.group(1), m.group(2)), []).append(float(m.group(3)))
for prof in sorted({p for p, _ in rates}):
    n, o = st.median(rates[(prof, 'new')]), st.median(rates[(prof, 'old')])
    print(f"{prof}: new median {n:.2f} ({rates[(prof, 'new')]}), old (286e996) median {o:.2f} ({rates[(prof, 'old')]}): new/old {n / o:.3f}")
PY
log "done after $(( $(date +%s) - T0 )) s"; pack
