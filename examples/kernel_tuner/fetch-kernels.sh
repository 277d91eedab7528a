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
fdfd54da2db9fd174bf7d02ab43359c6a26ebabc05cc52cfe578f759553c9c45 expdist.cu
SUMS
# spmv.json's matrix: its row offsets, drawn as the example draws them, the same bytes everywhere.
python3 "$here/make-spmv-rows.py" "$here/kernels/spmv_rows.bin" >/dev/null
echo "cef7d64098521ae363b9bfb66837b4577153ea1d5220cd086992ba56188bf4c5  $here/kernels/spmv_rows.bin" | sha256sum --quiet -c - ||
  { echo "fetch-kernels: kernels/spmv_rows.bin is not the bytes spmv.json was recorded with" >&2; exit 1; }
# expdist.json's point sets, drawn as the example draws them (B = A + 1e-5 noise), the same bytes everywhere.
python3 "$here/make-expdist-points.py" "$here/kernels" >/dev/null
(cd "$here/kernels" && sha256sum --quiet -c -) <<'POINTS' ||
2190ea3392346c43942e5205fd2fd9e2a883a39c1d61e79d323ede3caaf69e24  expdist_A.bin
e2956292cbad3198392cbd8fc2b401d18caaa4f0a6796f6ac6b810db4f02b0e2  expdist_B.bin
6431a91787e795765af86b77d1e2fdaa0b3c97715640c1c0bbd55cb46e971405  expdist_scale_A.bin
d2c59ab39da7a0cfefcddf74734209c93184a5c3772fe16e9e1fb4359ca80671  expdist_scale_B.bin
POINTS
  { echo "fetch-kernels: kernels/expdist_*.bin are not the bytes expdist.json was recorded with" >&2; exit 1; }
echo "fetch-kernels: Kernel Tuner $commit examples into $here/kernels/"
