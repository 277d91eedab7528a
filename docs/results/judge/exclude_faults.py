#!/usr/bin/env python3
"""A copy of a profile whose constraints also exclude every configuration a landscape recorded as a
crash (the faulting ones), written beside the original so its template paths resolve; then, given two
landscapes, whether the run with the faults and the run without them measured the same configurations
with the same verdicts (issue 34: a fault must not change any other candidate's verdict).

  exclude_faults.py make PROFILE LANDSCAPE OUT_PROFILE
  exclude_faults.py compare WITH_FAULTS.json WITHOUT.json
"""
import json, statistics, sys

def key(knobs):
    return json.dumps(knobs, sort_keys=True)

def make(profile, landscape, out):
    p = json.load(open(profile))
    crashes = [c["knobs"] for c in json.load(open(landscape))["configs"] if c["status"] == "crash"]
    # One constraint a configuration: muParser refuses a single expression of thousands of characters.
    p.setdefault("constraints", []).extend(" || ".join(f"{k} != {v}" for k, v in sorted(c.items()))
                                           for c in crashes)
    json.dump(p, open(out, "w"), indent=1)
    print(f"{out}: {len(crashes)} faulting configurations excluded")

def compare(a_file, b_file):
    a, b = (json.load(open(f)) for f in (a_file, b_file))
    A = {key(c["knobs"]): c for c in a["configs"] if c["status"] != "crash"}
    B = {key(c["knobs"]): c for c in b["configs"]}
    only_a, only_b = sorted(set(A) - set(B)), sorted(set(B) - set(A))
    differ = [k for k in A if k in B and A[k]["status"] != B[k]["status"]]
    ma = {k for k, c in A.items() if c["status"] == "measured"}
    mb = {k for k, c in B.items() if c["status"] == "measured"}
    ratios = [B[k]["p50_us"] / A[k]["p50_us"] for k in ma & mb]
    crashes = sum(c["status"] == "crash" for c in a["configs"])
    print(f"with faults: {len(a['configs'])} configurations, {crashes} crash, {len(ma)} measured; "
          f"without: {len(b['configs'])} configurations, {len(mb)} measured")
    print(f"not faulting, recorded in one run only: {len(only_a)} / {len(only_b)}; verdicts differing: {len(differ)} {differ[:3]}")
    print(f"measured in both: {len(ma & mb)}; measured in one only: {sorted(ma ^ mb)[:5]}")
    if ratios:
        q = statistics.quantiles(ratios, n=20) if len(ratios) > 1 else [ratios[0]] * 19
        print(f"median ratio (without / with) {statistics.median(ratios):.4f}, 5-95% {q[0]:.4f}-{q[-1]:.4f}")
    same = not only_a and not only_b and not differ and ma == mb
    print("SAME verdicts" if same else "DIFFERENT verdicts")
    return 0 if same else 1

if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(*sys.argv[2:5])
    else:
        sys.exit(compare(*sys.argv[2:4]))
