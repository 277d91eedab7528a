#!/usr/bin/env bash
# Installs evo's build dependencies from Debian packages (the CUDA 13.0 toolkit must already be
# in /usr/local/cuda or $CUDA_HOME: it is not a Debian package).
set -euo pipefail
pkgs=(cmake g++ make nlohmann-json3-dev libspdlog-dev libsqlite3-dev libgtest-dev libcli11-dev libmuparser-dev
      zlib1g-dev                    # evo import-landscape reads gzipped caches
      chromium python3-jsonschema  # the report test opens the page in a headless browser; the T4 test validates against its schema
      libpq-dev postgresql          # postgresql: the server tests/test_pg.cpp starts in a temporary folder
      python3-numpy)                # command references (profiles/stencil3.json's script) and their tests
# --bench: what bench/kt_compare.py needs to run Kernel Tuner's strategies in simulation mode
[ "${1:-}" = "--bench" ] && pkgs+=(python3-scipy python3-sklearn python3-pandas python3-xmltodict python3-packaging)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
cuda="${CUDA_HOME:-/usr/local/cuda}"
[ -x "$cuda/bin/nvcc" ] || { echo "CUDA toolkit not found at $cuda (set CUDA_HOME)" >&2; exit 1; }
