#!/usr/bin/env bash
# scripts/gpu-tests.sh --missing: a test skipped for want of a GPU and left out of the filter is named
# (exit 1); one in the filter, or one skipped for another reason, is not.
set -uo pipefail
root="$1"; d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
printf '%s\n' '[ RUN      ] Shapes/SdpaRef.MatchesDoublePrecisionCpuAttention/fp8_S3_D64_causal' \
  'no CUDA device: CUDA driver version is insufficient for CUDA runtime version' \
  '[  SKIPPED ] Shapes/SdpaRef.MatchesDoublePrecisionCpuAttention/fp8_S3_D64_causal (0 ms)' \
  '[ RUN      ] Population.ReadonlyEmptyFileIsReportedAndLeftEmpty' \
  'running as root: file permissions are not enforced' \
  '[  SKIPPED ] Population.ReadonlyEmptyFileIsReportedAndLeftEmpty (0 ms)' > "$d/covered.txt"
cp "$d/covered.txt" "$d/uncovered.txt"
printf '%s\n' '[ RUN      ] NewSuite.NeedsTheDevice' 'no CUDA device: none' '[  SKIPPED ] NewSuite.NeedsTheDevice (0 ms)' >> "$d/uncovered.txt"
"$root/scripts/gpu-tests.sh" --missing "$d/covered.txt" > "$d/a.txt" || { echo "covered log refused:"; cat "$d/a.txt"; exit 1; }
if "$root/scripts/gpu-tests.sh" --missing "$d/uncovered.txt" > "$d/b.txt"; then echo "uncovered test not named"; exit 1; fi
grep -qx 'NewSuite.NeedsTheDevice' "$d/b.txt" || { echo "wrong test named:"; cat "$d/b.txt"; exit 1; }
if grep -q 'Population' "$d/b.txt"; then echo "a skip for another reason named"; exit 1; fi
echo ok
