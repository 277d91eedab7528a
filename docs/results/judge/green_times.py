#!/usr/bin/env python3
"""GREEN's seconds by step (EVO_GREEN_TIMES files, one JSON line per GREEN run) and each
landscape's GPU seconds per candidate (GREEN + FAST + metrics), side by side:
  green_times.py BEFORE.jsonl AFTER.jsonl [BEFORE_LANDSCAPE AFTER_LANDSCAPE]"""
import json, statistics, sys

def steps(path):
    rows = [json.loads(l) for l in open(path)]
    keys = sorted({k for r in rows for k in r["steps"]} | {"green_s"})
    return len(rows), {k: [r["green_s"] if k == "green_s" else r["steps"].get(k, 0.0) for r in rows] for k in keys}

def gpu(path):
    cs = [c for c in json.load(open(path))["configs"] if c["status"] == "measured"]
    g = [c["seconds"]["green"] for c in cs]
    t = [c["seconds"]["green"] + c["seconds"]["fast"] + c["seconds"]["metrics"] for c in cs]
    return len(cs), statistics.mean(g), statistics.mean(t), statistics.median(t)

(n1, a), (n2, b) = steps(sys.argv[1]), steps(sys.argv[2])
print(f"GREEN runs: before {n1}, after {n2}; ms a GREEN run (median / mean), before -> after")
for k in sorted(set(a) | set(b)):
    f = lambda v: f"{1000 * statistics.median(v):8.2f} / {1000 * statistics.mean(v):8.2f}" if v else "       -"
    print(f"  {k:12s} {f(a.get(k, []))}  ->  {f(b.get(k, []))}")
if len(sys.argv) > 4:
    for name, path in (("before", sys.argv[3]), ("after", sys.argv[4])):
        n, g, t, tm = gpu(path)
        print(f"{name}: {n} measured; GPU s a measured candidate: GREEN {1000 * g:.1f} ms, GREEN+FAST+metrics mean {1000 * t:.1f} ms, median {1000 * tm:.1f} ms")
