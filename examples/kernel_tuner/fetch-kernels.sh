#!/usr/bin/env bash
# Copies Kernel Tuner's example kernels, exactly as they are in its repository, into
# examples/kernel_tuner/kernels/ (not committed: they are Kernel Tuner's code, Apache-2.0).
# The profiles beside this script tune them; their references (ref/) are evo's own.
#
#   examples/kernel_tuner/fetch-kernels.sh [KERNEL_TUNER]      (or KERNEL_TUNER_DIR=... in the environment)
#
# KERNEL_TUNER is a clone of Kernel Tuner (a git dir or a work tree), or the URL
# https://github.com/KernelTuner/kernel_tuner to clone it from. Each file is checked against the
# SHA-256 it had at the pinned commit, so the landscapes in tests/data were recorded from exactly
# these bytes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
commit=96a6abc1019179397753c4afede9149a80aec369
src="${1:-${KERNEL_TUNER_DIR:-}}"
if [ -z "$src" ]; then
  echo "fetch-kernels: no Kernel Tuner: give a clone (git dir or work tree) or https://github.com/KernelTuner/kernel_tuner," \
       "as the argument or as KERNEL_TUNER_DIR" >&2
  exit 2
fi
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
if [ -d "$src" ] && git --git-dir="$src" rev-parse -q --verify "$commit^{commit}" >/dev/null 2>&1; then
  gitdir="$src"
elif [ -d "$src/.git" ]; then
  gitdir="$src/.git"
else
  git clone -q --bare "$src" "$tmp/kt.git"; gitdir="$tmp/kt.git"
fi
mkdir -p "$here/kernels"
while read -r sum name; do
  git --git-dir="$gitdir" show "$commit:examples/cuda/$name" > "$here/kernels/$name"
  echo "$sum  $here/kernels/$name" | sha256sum --quiet -c - || { echo "fetch-kernels: $name differs from Kernel Tuner $commit" >&2; exit 1; }
done <<'SUMS'
7b85c7f040b14c2379c478950aa969815b241f1eebff372e1788bc82768cb1fc matmul.cu
ede1a67a30cf28f62f7fa71e8fa74399ec679ff531f5043e86ee609567379f17 pnpoly.cu
3a7c8c8dabd6e997489233fa2dbbb062b4d6c1c9ea6995688e6c9ec9a5426b07 stencil.cu
88a227ee8e99f0ca276cd7572538e279ae4f4e8478030298f69d93723fd70c35 zeromeanfilter.cu
07f0752a24ffefc73505e03c5da92760ad0520c1bc15990f4117c8d5c7c41051 reduction.cu
14b74948ac333fc1ec00c4476bff1a2ea5063c622afab5f85a45685b13582948 convolution.cu
95a98d6e868878332bc1fcbb74bfa9c00d63cf252d4fe77185c5383f88392e6f spmv.cu
SUMS
# spmv.json's matrix: its row offsets, drawn as the example draws them, the same bytes everywhere.
python3 "$here/make-spmv-rows.py" "$here/kernels/spmv_rows.bin" >/dev/null
echo "cef7d64098521ae363b9bfb66837b4577153ea1d5220cd086992ba56188bf4c5  $here/kernels/spmv_rows.bin" | sha256sum --quiet -c - ||
  { echo "fetch-kernels: kernels/spmv_rows.bin is not the bytes spmv.json was recorded with" >&2; exit 1; }
echo "fetch-kernels: Kernel Tuner $commit examples into $here/kernels/"
