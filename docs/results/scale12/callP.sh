#!/usr/bin/env bash
# Call P (twelfth session, one H100): the README's main job (`evo run --budget 200`, an empty
# database and a cold compile cache) on the final build, without a pool and with one (issue 35:
# <= 20 s on an H100); then evo.tune on the GPU with arguments of numpy dtypes other than float32
# (float64, int16, uint8: the eighth session's change, until now run only through a replay).
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/p.tgz -C $S . ; }
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpu: $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader | paste -sd';'), $(nproc) cores"
for mode in nopool pool; do
  rm -rf /tmp/p-main; mkdir -p /tmp/p-main
  [ $mode = pool ] && EVO_POOL_DIR=/tmp/p-pool bundle/evo pool start > $S/pool_start.txt 2>&1
  t0=$(date +%s%N)
  (cd /tmp/p-main && EVO_POOL_DIR=/tmp/p-pool EVO_CACHE=/tmp/p-main/cache EVO_TRACE=$S/main_$mode.trace.jsonl $OLDPWD/bundle/evo run --budget 200 > $S/main_job_$mode.txt 2>&1)
  log "main job, $mode: rc=$? wall $(( ($(date +%s%N) - t0) / 1000000 )) ms: $(grep -E '^run |^time|metrics of|got no metrics|pool' $S/main_job_$mode.txt | paste -sd' ' | cut -c1-400)"
  (cd /tmp/p-main && $OLDPWD/bundle/evo show-elites 2>&1 | head -8) >> $S/log.txt
done
EVO_POOL_DIR=/tmp/p-pool bundle/evo pool stop >> $S/log.txt 2>&1
mkdir -p /tmp/p-tune && cat > /tmp/p-tune/tune_check.py <<'PY'
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import evo
src = r"""
__global__ void mixed_add(double* c, const double* a, const short* b, const unsigned char* m, int n) {
  int i = blockIdx.x * block_size_x + threadIdx.x;
  if (i < n) c[i] = m[i] ? a[i] + (double)b[i] : a[i];
}
"""
n = np.int32(1 << 20)
rng = np.random.default_rng(3)
a = rng.standard_normal(n).astype(np.float64)
b = rng.integers(-1000, 1000, n).astype(np.int16)
m = rng.integers(0, 2, n).astype(np.uint8)
c = np.zeros(n, dtype=np.float64)
want = np.where(m != 0, a + b.astype(np.float64), a)
results, env = evo.tune("mixed_add", src, n, [c, a, b, m, n], {"block_size_x": [32, 64, 128, 256, 512, 1024]},
                        answer=[want, None, None, None, None], atol=1e-12, strategy="exhaustive", budget=6,
                        workdir=sys.argv[2], evo_binary=sys.argv[3], quiet=True)
ok = [r for r in results if "time" in r and isinstance(r["time"], float)]
print("evo.tune on the GPU:", len(results), "results,", len(ok), "timed; best",
      min(ok, key=lambda r: r["time"]) if ok else None)
sys.exit(0 if len(ok) == 6 else 1)
PY
(cd /tmp/p-tune && EVO_CACHE=/tmp/p-tune/cache timeout 120 python3 tune_check.py $OLDPWD/python /tmp/p-tune/work $EVO_BINARY > $S/tune_check.txt 2>&1)
log "evo.tune check: rc=$? $(tail -n 3 $S/tune_check.txt | paste -sd' ' | cut -c1-400)"
log "done after $(( $(date +%s) - T0 )) s"; pack
