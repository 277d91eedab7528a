#!/usr/bin/env bash
# Packs Debian's PostgreSQL server (initdb, pg_ctl, postgres, their modules, share files and every
# library they load but the C runtime) into pgdist.tar.xz, for a GPU host that has no PostgreSQL and
# no package registry (the device tool: carry ["bundle", "pgdist.tar.xz"]). Its layout keeps the
# server's bin/ and share/ at the same relative places as under /usr, so PostgreSQL finds its share
# files relative to its binaries wherever the archive is unpacked. scripts/gpu-queue.sh unpacks and
# starts it.
#   scripts/pg-dist.sh          # here, after scripts/install-deps.sh (postgresql)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -n "$bin" ] || { echo "pg-dist: no /usr/lib/postgresql/*/bin (scripts/install-deps.sh installs postgresql)" >&2; exit 2; }
ver=$(basename "$(dirname "$bin")")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
d="$tmp/pgdist"
mkdir -p "$d/lib/postgresql/$ver/bin" "$d/share/postgresql" "$d/libs"
cp "$bin"/{initdb,pg_ctl,postgres,psql} "$d/lib/postgresql/$ver/bin/"
# Modules without the JIT (LLVM, 100 MB, off unless asked for).
cp -r "/usr/lib/postgresql/$ver/lib" "$d/lib/postgresql/$ver/"
rm -rf "$d/lib/postgresql/$ver/lib/"{llvmjit.so,llvmjit_types.bc,bitcode}
cp -r "/usr/share/postgresql/$ver" "$d/share/postgresql/"
for f in "$d/lib/postgresql/$ver/bin/"* "$d/lib/postgresql/$ver/lib/"*.so; do ldd "$f" 2>/dev/null; done |
  awk '/=> \// {print $3}' | grep -vE '/(libc|libm|libpthread|librt|libdl|libresolv|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' |
  sort -u | while read -r lib; do cp -L "$lib" "$d/libs/"; done
echo "$ver" > "$d/VERSION"
tar -C "$tmp" -cJf pgdist.tar.xz pgdist
echo "pgdist.tar.xz: PostgreSQL $ver, $(du -h pgdist.tar.xz | cut -f1) ($(du -sh "$d" | cut -f1) unpacked)"
