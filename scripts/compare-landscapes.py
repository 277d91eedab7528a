#!/usr/bin/env python3
"""Compares two exported landscapes of one space, configuration by configuration: how many each
holds and both, which verdicts differ, and the median ratio of the second's medians to the first's.
   scripts/compare-landscapes.py A.json B.json [NAME_A NAME_B]      (used by gpu-devices.sh, gpu-queue.sh)"""
import json
import statistics
import sys

a_path, b_path = sys.argv[1:3]
name_a, name_b = sys.argv[3:5] if len(sys.argv) >= 5 else ("first", "second")
a, b = (json.load(open(f)) for f in (a_path, b_path))
key = lambda c: json.dumps(c["knobs"], sort_keys=True)
A, B = ({key(c): c for c in l["configs"]} for l in (a, b))
same = [k for k in A if k in B]
diff = [k for k in same if A[k]["status"] != B[k]["status"]]
ratios = [B[k]["p50_us"] / A[k]["p50_us"] for k in same if A[k]["status"] == "measured" == B[k]["status"]]
cvs = [A[k].get("cv", 0) for k in same if A[k]["status"] == "measured"]
print(f"  configs: {name_a} {len(A)}, {name_b} {len(B)}, both {len(same)}; verdicts differing: {len(diff)} {diff[:3]}")
if len(ratios) >= 2:  # quantiles need two
    q = statistics.quantiles(ratios, n=20)
    print(f"  median ratio {name_b}/{name_a} {statistics.median(ratios):.4f}, 5-95% {q[0]:.4f}-{q[-1]:.4f}; "
          f"median CV of {name_a}'s timings {statistics.median(cvs):.4f}")
