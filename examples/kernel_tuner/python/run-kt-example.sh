#!/usr/bin/env bash
# Runs one of Kernel Tuner's own example scripts (examples/cuda/NAME.py at the pinned commit) through
# evo.tune, with nothing changed but its imports and the call's name: `kernel_tuner.tune_kernel(` and
# `tune_kernel(` become `evo.tune(`, `kernel_tuner.file_utils` becomes `evo.file_utils`. The diff is
# printed. Kernel Tuner's files (Apache-2.0) are taken from a clone when this runs, never committed.
#
#   examples/kernel_tuner/python/run-kt-example.sh [--prepare] NAME [KERNEL_TUNER]
#
# NAME: vector_add, convolution, ...; KERNEL_TUNER (or KERNEL_TUNER_DIR): a clone of
# https://github.com/KernelTuner/kernel_tuner, git dir or work tree. The example's folder is written
# to $OUT/NAME (default kt-examples/NAME under the current folder, ignored by git) with the script
# rewritten, and run there. --prepare stops before running (on a machine without a GPU); run it
# later, where the GPU is, with no KERNEL_TUNER, and the prepared folder is run as it is.
#
# Running needs a GPU, python3 with NumPy ($PYTHON, default python3) and evo ($EVO_BINARY, default
# build/evo of this checkout). EVO_TUNE_BUDGET=N caps the evaluations of a script that gives no
# budget. evo.tune's folder (profile, data, evo.db, results.t4.json, tune.sh) is printed at its start,
# and every such folder at the end.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
commit=96a6abc1019179397753c4afede9149a80aec369
prepare=0
[ "${1:-}" = "--prepare" ] && { prepare=1; shift; }
name="${1:-}"
src="${2:-${KERNEL_TUNER_DIR:-}}"
[ -n "$name" ] || { echo "run-kt-example: give the example's name (vector_add, convolution)" >&2; exit 2; }
out="${OUT:-$PWD/kt-examples}/$name"

if [ -n "$src" ]; then
  gitdir="$src"; [ -d "$src/.git" ] && gitdir="$src/.git"
  git --git-dir="$gitdir" rev-parse -q --verify "$commit^{commit}" >/dev/null ||
    { echo "run-kt-example: $src has no commit $commit (Kernel Tuner's examples are pinned there)" >&2; exit 2; }
  git --git-dir="$gitdir" cat-file -e "$commit:examples/cuda/$name.py" 2>/dev/null ||
    { echo "run-kt-example: Kernel Tuner has no examples/cuda/$name.py" >&2; exit 2; }
  rm -rf "$out"; mkdir -p "$out"
  # The example's folder as it is (its scripts open their .cu files by relative name).
  git --git-dir="$gitdir" archive "$commit" examples/cuda | tar -x -C "$out" --strip-components=2
  cd "$out"
  if grep -q 'run_kernel' "$name.py"; then
    echo "run-kt-example: $name.py calls kernel_tuner.run_kernel, which evo does not provide (evo.tune only)" >&2
    exit 2
  fi
  mv "$name.py" "$name.kernel_tuner.py"
  sed -e 's/^from kernel_tuner import tune_kernel$/import evo/' \
      -e 's/^from kernel_tuner\.file_utils import /from evo.file_utils import /' \
      -e 's/^import kernel_tuner$/import evo/' \
      -e 's/kernel_tuner\.tune_kernel(/evo.tune(/g' \
      -e 's/\btune_kernel(/evo.tune(/g' "$name.kernel_tuner.py" > "$name.py"
  if grep -n 'kernel_tuner' "$name.py" >&2; then
    echo "run-kt-example: $name.py still uses kernel_tuner (above) after its imports and call were changed" >&2
    exit 2
  fi
  echo "run-kt-example: $out/$name.py, changed from Kernel Tuner's $commit:"
  diff -u "$name.kernel_tuner.py" "$name.py" || true
  ((prepare)) && { echo "run-kt-example: prepared; run it with: OUT=${OUT:-kt-examples} $0 $name"; exit 0; }
elif [ -f "$out/$name.py" ]; then
  cd "$out"
  echo "run-kt-example: $out/$name.py, prepared earlier"
else
  echo "run-kt-example: no Kernel Tuner (give a clone as the second argument or as KERNEL_TUNER_DIR) and no prepared $out/$name.py" >&2
  exit 2
fi

export PYTHONPATH="$repo/python${PYTHONPATH:+:$PYTHONPATH}"
export EVO_BINARY="${EVO_BINARY:-$repo/build/evo}"
"${PYTHON:-python3}" "$name.py"
echo "run-kt-example: $name done in $out; evo.tune's folders:"
ls -d "$out"/evo-* 2>/dev/null || echo "  (none: the script did not call evo.tune)"
