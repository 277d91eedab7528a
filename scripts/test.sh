#!/usr/bin/env bash
# Installs, builds and runs every test. GPU tests skip (saying why) where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
export EVO_CACHE="${EVO_CACHE:-$PWD/build/evo-cache}"
ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
