#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, the prefix moved elsewhere, and the installed evo run
# from outside the source tree: `evo profiles`, `evo check` and `evo compile` of a shipped profile
# must find their data beside the executable (<prefix>/share/evo), not through the source path.
# The installed Python package (evo.tune) finds that evo beside itself, and `pip install` of the
# tree's python/ gives a package that imports.
#   tests/install_test.sh BUILD_DIR SOURCE_DIR PYTHON_WITH_NUMPY      (ctest: install.relocated)
set -euo pipefail
build="$1"; src="$(cd "$2" && pwd -P)"; py="${3:-}"
tmp="$(mktemp -d /tmp/evo-install-XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
mv "$tmp/prefix" "$tmp/moved"          # relocatable: nothing may remember the install prefix
prefix="$tmp/moved"
[ -x "$prefix/bin/evo" ] || fail "no bin/evo in the installed prefix"
[ -f "$prefix/share/evo/profiles/sdpa_fp8.json" ] || fail "no share/evo/profiles/sdpa_fp8.json"
[ -f "$prefix/share/evo/templates/sdpa.cu" ] || fail "no share/evo/templates/sdpa.cu"
[ -f "$prefix/share/evo/python/evo_torch.py" ] || fail "no share/evo/python/evo_torch.py (export --torch copies it)"
[ -f "$prefix/share/evo/python/evo/tune.py" ] || fail "no share/evo/python/evo/tune.py (evo.tune)"
[ -z "$(find "$prefix/share/evo/python" -name __pycache__)" ] || fail "the install copied __pycache__ folders"

# No string constant in the program names the source tree (debug info may; it decides nothing).
rodata="$(readelf -p .rodata "$prefix/bin/evo")" || fail "readelf could not read bin/evo"
if grep -qF "$src" <<<"$rodata"; then fail "bin/evo's .rodata holds the source path $src"; fi

work="$tmp/work"; mkdir -p "$work"; cd "$work"
unset EVO_DATA_DIR EVO_PROFILES EVO_BINARY
export EVO_CACHE="$tmp/cache"
evo="$prefix/bin/evo"

out="$("$evo" profiles)" || fail "evo profiles failed"
grep -q sdpa_fp8_wgmma <<<"$out" || fail "evo profiles does not list sdpa_fp8_wgmma: $out"
"$evo" check sdpa_fp8 >/dev/null || fail "evo check sdpa_fp8 failed"
"$evo" compile gemm_fp16 --jobs 1 >compile.txt 2>&1 || { cat compile.txt; fail "evo compile gemm_fp16 failed"; }
grep -qi "pass" compile.txt || { cat compile.txt; fail "evo compile printed no verdict"; }

# The installed package runs the installed evo: no EVO_BINARY, no evo on PATH.
[ -n "$py" ] || fail "no python3 with NumPy was found to test the installed evo package (python3-numpy)"
found="$(env -u EVO_BINARY PATH=/nonexistent PYTHONPATH="$prefix/share/evo/python" PYTHONDONTWRITEBYTECODE=1 \
         "$py" -c 'import evo, sys; sys.stdout.write(evo.find_evo_binary())')" || fail "import evo from the prefix failed"
[ "$found" = "$prefix/bin/evo" ] || fail "the installed evo package found '$found', not $prefix/bin/evo"
# pip install of the package (from a copy: setuptools builds inside the folder it is given).
if "$py" -m pip --version >/dev/null 2>&1; then
  cp -r "$src/python" "$tmp/pkg"
  "$py" -m pip install --quiet --no-deps --no-build-isolation --no-index --target "$tmp/site" "$tmp/pkg" >pip.txt 2>&1 \
    || { cat pip.txt; fail "pip install python/ failed"; }
  found="$(EVO_BINARY=/nonexistent/evo PYTHONPATH="$tmp/site" "$py" -c 'import evo, evo_torch, sys; sys.stdout.write(evo.find_evo_binary())')" \
    || fail "the pip-installed evo package does not import"
  [ "$found" = /nonexistent/evo ] || fail "the pip-installed package does not take EVO_BINARY: $found"
else
  echo "install.relocated: $py has no pip: the pip install of python/ is not tested"
fi

# The data really comes from the prefix: without it evo says where it looked, and --data-dir
# (or EVO_DATA_DIR) points it at data elsewhere.
mv "$prefix/share" "$tmp/data"
if "$evo" profiles >err.txt 2>&1; then fail "evo profiles worked without share/evo"; fi
grep -q "share/evo/profiles" err.txt || fail "the error does not say where evo looked: $(cat err.txt)"
[ "$(wc -l <err.txt)" -eq 1 ] || fail "the error is not one line: $(cat err.txt)"
"$evo" --data-dir "$tmp/data/evo" check sdpa_fp8 >/dev/null || fail "--data-dir did not find the profiles"
# (captured first: `evo profiles | grep -q` under pipefail fails whenever grep stops reading before evo
# has written its last line, which a longer listing made happen in a fresh clone's CI)
out="$(EVO_DATA_DIR="$tmp/data/evo" "$evo" profiles)" || fail "evo profiles with EVO_DATA_DIR failed"
grep -q gemm_fp16 <<<"$out" || fail "EVO_DATA_DIR did not find the profiles"
echo "install.relocated: ok"
