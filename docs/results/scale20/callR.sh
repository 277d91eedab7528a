#!/usr/bin/env bash
# Call R (forty-first session, 1 x H100 asked for): the build of 4d3ddc0, whose pool workers bind
# their socket under a name of their own and rename it once listening (a CI failure of
# PoolWorker.APoolWorkerThatDiesMidRunIsReplacedByTheRunsOwn: a connection between bind() and
# listen() refused). The pool's and the workers' GPU tests again, with the new
# PoolWorker.ASocketPathAppearsOnlyOnceItsWorkerListens (20 worker starts, each initialising CUDA here).
# Predicted: every test of the filter passes but the five that need a machine without a GPU
# (call Q: 25 passed of these suites in 96 s); the new test passes, in 2-10 s (a worker's CUDA start
# per spawn); the pool's attaching runs (GpuPool.*) unchanged.
# carry ["bundle.tar.xz"].
set -u; export PYTHONUNBUFFERED=1
T0=$(date +%s)
[ -x bundle/evo ] && [ bundle/evo -nt bundle.tar.xz ] || { rm -rf bundle; tar xJf bundle.tar.xz; }
S=$OUT/s; mkdir -p $S; pack() { tar czf $OUT/r.tgz -C $S . ; }
log() { echo "$(date -u +%T) $*" | tee -a $S/log.txt; }
log "gpus: $(nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | paste -sd';'), $(nproc) cores"
export EVO_BINARY=$PWD/bundle/evo LD_LIBRARY_PATH=$PWD/bundle/lib:${LD_LIBRARY_PATH:-}
EVO_CACHE=/tmp/r-tests timeout 400 bundle/evo_tests --gtest_filter='PoolWorker.*:PoolCli.*:GpuPool*:WorkerProtocol.*:GpuCli.*' > $S/pool_tests.txt 2>&1
log "pool tests: rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) \]|tests? from .* ran' $S/pool_tests.txt | paste -sd' ' | cut -c1-300)"
grep -E '^\[  FAILED  \]|ASocketPath' $S/pool_tests.txt | head -20 | tee -a $S/log.txt
log "done after $(( $(date +%s) - T0 )) s"; pack
