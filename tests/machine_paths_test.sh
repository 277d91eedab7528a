#!/usr/bin/env bash
# No file of the project names a path that exists on one machine only (issue 37): scripts, benches,
# sources, CMake, tests, examples and docs find other repositories through an argument or an
# environment variable. System locations (/usr, /tmp, /dev, /proc, /etc, /bin) are fine, and so is
# docs/results/, which keeps what lent machines printed, as they printed it.
#   tests/machine_paths_test.sh SOURCE_DIR        (ctest: layering.no_machine_paths)
set -euo pipefail
cd "$1"
# The roots under which machines keep their own trees: home and work folders, mounts, site installs.
pattern='(?<![\w.~$}\]>:/-])/(work|home|root|Users|mnt|media|scratch|srv|opt|gpfs|lustre|nfs|net)/[\w.+-]'
# Stand-ins that unit tests compute with and never open, as FILE:PATH-PREFIX.
allowed=(
  "tests/test_default_profile.cpp:/opt/x/"   # a made-up install prefix the data folder is derived from
)
fail() { echo "FAIL: $*" >&2; exit 1; }

# The pattern itself: it finds a machine's path and leaves URLs, relative paths and system ones.
probe="$(mktemp)"; trap 'rm -f "$probe"' EXIT
printf '%s\n' 'src=/work/.mirror/kernel_tuner' 'https://github.com/home/x' 'docs/work/x' '/usr/local/cuda/bin' \
  'cd "/home/alice/kt"' > "$probe"
[ "$(grep -cP "$pattern" "$probe")" = 2 ] || fail "the pattern does not find exactly the two machine paths of its probe"

# (This script is left out: its probe names such paths on purpose.)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files | grep -v -e '^docs/results/' -e '^tests/machine_paths_test\.sh$')
else
  mapfile -t files < <(find . -type f -not -path './build*' -not -path './.git/*' -not -path './docs/results/*' \
                         -not -path ./tests/machine_paths_test.sh | sed 's|^\./||')
fi
[ "${#files[@]}" -gt 100 ] || fail "only ${#files[@]} files to check: not the project's tree"
found=""
while IFS= read -r line; do
  keep=1
  for a in "${allowed[@]}"; do
    [[ "$line" == "${a%%:*}:"* && "$line" == *"${a#*:}"* ]] && keep=0
  done
  ((keep)) && found+="$line"$'\n'
done < <(grep -nIP "$pattern" "${files[@]}" || true)
[ -z "$found" ] || fail "paths of one machine (give them as an argument or an environment variable):
$found"
echo "layering.no_machine_paths: ${#files[@]} files, none names a machine's own path"
