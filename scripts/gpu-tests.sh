#!/usr/bin/env bash
# The GPU tests: every evo_tests case that skips without a CUDA device, run where there is one.
#   scripts/gpu-tests.sh [EVO_TESTS] [gtest args...]   # runs them (default bundle/evo_tests, else build/evo_tests)
#   scripts/gpu-tests.sh --filter                       # prints the filter
#   scripts/gpu-tests.sh --missing LOG                  # LOG: evo_tests' output on a machine without a GPU;
#                                                       # lists the tests it skipped for want of a device that
#                                                       # the filter leaves out (exit 1 when there are any)
# One filter, kept here: the device calls' hand-written filters had drifted (`SdpaRef*` matches none of
# the parametrised `Shapes/SdpaRef.*`, and `GuardedDevice.*` was in none; docs/results/scale16). Five of
# these tests need a machine *without* a GPU and skip on one, saying so.
set -uo pipefail
cd "$(dirname "$0")/.."
FILTER='Gpu*:GreenCompare*:Metric*:BuiltinCache*:WorkerProtocol.*:Buffers.*:*SdpaRef*:GuardedDevice.*:*OnDevice*:PoolWorker.*:PoolCli.*:CompilePool.*:Ptxas*:TmaCopy*'
case "${1:-}" in
  --filter) echo "$FILTER"; exit 0 ;;
  --missing)
    log="${2:?--missing LOG: evo_tests output from a machine without a GPU}"
    # A skip's reason is printed on the lines between its "[ RUN" and its "[  SKIPPED ]".
    missing=$(awk '/^\[ RUN/ {reason = ""; next}
                   /^\[  SKIPPED \] / {if (reason ~ /CUDA|GPU|device/) print $4; reason = ""; next}
                   {reason = reason " " $0}' "$log" | sort -u |
      while read -r t; do
        hit=0; IFS=: read -ra pats <<< "$FILTER"
        for p in "${pats[@]}"; do [[ "$t" == $p ]] && { hit=1; break; }; done
        [ $hit = 0 ] && echo "$t"
      done)
    if [ -n "$missing" ]; then echo "skipped for want of a GPU, not in scripts/gpu-tests.sh's filter:"; echo "$missing"; exit 1; fi
    echo "every test skipped for want of a GPU is in the filter"; exit 0 ;;
esac
bin="${1:-}"
if [ -z "$bin" ] || [[ "$bin" == --* ]]; then bin=$( [ -x bundle/evo_tests ] && echo bundle/evo_tests || echo build/evo_tests ); else shift; fi
[ -d bundle/lib ] && export LD_LIBRARY_PATH="$PWD/bundle/lib:${LD_LIBRARY_PATH:-}"
exec "$bin" --gtest_filter="$FILTER" "$@"
