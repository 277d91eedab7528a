#!/usr/bin/env bash
# Builds evo here and packs what the GPU machine lacks into bundle/: the evo and evo_tests
# binaries plus the non-system shared libraries they load (spdlog, fmt, muparser, sqlite), found
# through the binaries' $ORIGIN/lib rpath, and the shipped profiles, templates and PyTorch module in
# bundle/share/evo, where bundle/evo looks for them (engine/data_dir.h). NVRTC, CUPTI and the driver come from the GPU
# machine's own /usr/local/cuda. Then, through the device tool (carry: ["bundle"]), from the
# repository root there:  bundle/evo eval gemm_fp16   or   bundle/evo_tests --gtest_filter='Gpu*'
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${EVO_BUNDLE_BUILD:-build-bundle}"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target evo evo_tests
rm -rf bundle && mkdir -p bundle/lib bundle/share/evo
cp -r profiles templates python bundle/share/evo/
cp "$BUILD/evo" "$BUILD/evo_tests" bundle/
strip --strip-debug bundle/evo bundle/evo_tests
for bin in bundle/evo bundle/evo_tests; do
  # Everything but the C runtime, the C++ runtime (the GPU host's is newer) and CUDA's own (there in
  # /usr/local/cuda/lib64): the tests' libpq brings Kerberos, LDAP and GnuTLS, absent there.
  ldd "$bin" | awk '/=> \// {print $3}' |
    grep -vE '/(libc|libm|libpthread|librt|libdl|libutil|libresolv|ld-linux[^/]*|libgcc_s|libstdc\+\+|libcupti|libnvrtc|libcuda)\.so' || true
done | sort -u | while read -r lib; do cp -L "$lib" bundle/lib/; done
echo "bundle/: $(du -sh bundle | cut -f1)"; ls bundle bundle/lib
