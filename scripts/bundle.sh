#!/usr/bin/env bash
# Builds evo here and packs what the GPU machine lacks into bundle/: the evo and evo_tests
# binaries plus the non-system shared libraries they load (spdlog, fmt, muparser, sqlite), found
# through the binaries' $ORIGIN/lib rpath, and the shipped profiles, templates and PyTorch module in
# bundle/share/evo, where bundle/evo looks for them (engine/data_dir.h). NVRTC, CUPTI and the driver come from the GPU
# machine's own /usr/local/cuda. It packs bundle/ into bundle.tar.xz (8.5 MiB); through the device
# tool (carry: ["bundle.tar.xz"]), from the repository root there:
#   tar xJf bundle.tar.xz && bundle/evo eval gemm_fp16   or   ... && bundle/evo_tests --gtest_filter='Gpu*'
# A call carries at most 64 MiB with the tracked tree (55.5 MiB at 051bb3d, 28 MiB of it the raw logs
# under docs/results, which no command reads). When a call is refused as too large, leave those out of
# the tree for that call and put them back after it:
#   git ls-files 'docs/results/*raw*' | xargs rm -f   ...   git checkout -- $(git ls-files -d)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${EVO_BUNDLE_BUILD:-build-bundle}"
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target evo evo_tests
rm -rf bundle && mkdir -p bundle/lib bundle/share/evo
cp -r profiles templates python bundle/share/evo/
cp "$BUILD/evo" "$BUILD/evo_tests" bundle/
# Symbols too: a device call carries at most 64 MiB with the tracked tree (55.5 MiB at 051bb3d).
strip --strip-all bundle/evo bundle/evo_tests
for bin in bundle/evo bundle/evo_tests; do
  # Everything but the C runtime, the C++ runtime (the GPU host's is newer) and CUDA's own (there in
  # /usr/local/cuda/lib64): the tests' libpq brings Kerberos, LDAP and GnuTLS, absent there.
  ldd "$bin" | awk '/=> \// {print $3}' |
    grep -vE '/(libc|libm|libpthread|librt|libdl|libutil|libresolv|ld-linux[^/]*|libgcc_s|libstdc\+\+|libcupti|libnvrtc|libcuda)\.so' || true
done | sort -u | while read -r lib; do cp -L "$lib" bundle/lib/ && strip --strip-unneeded bundle/lib/"$(basename "$lib")"; done
# bundle.tar.xz, the one file a device call carries (carry: ["bundle.tar.xz"]; the calls' scripts unpack it).
tar cf - bundle | xz -9e -T "$(nproc)" > bundle.tar.xz
echo "bundle/: $(du -sh bundle | cut -f1), bundle.tar.xz: $(du -sh bundle.tar.xz | cut -f1)"; ls bundle bundle/lib
