#!/usr/bin/env python3
"""Where an `evo run`'s seconds went, from its EVO_TRACE file (docs/guide.md, "Where a run's
seconds go"). One block a run (several runs may append to one file): the coordinator's spans in
order, then for each GPU worker (and each GPU's profiling worker) its first job by phase, when its last job ended, how busy it was
between them and the gaps between its jobs, and for each lane the gaps between measurements.

  scripts/trace-summary.py TRACE.jsonl
"""
import collections
import json
import sys


def main(path):
    events = [json.loads(line) for line in open(path) if line.strip()]
    # A run begins with the coordinator's first span ("evo started", at the process's start).
    starts = sorted(e["ts"] for e in events if e["tid"] == "coordinator" and e["name"].startswith("evo started"))
    if not starts:
        starts = [min(e["ts"] for e in events)]
    runs = collections.OrderedDict((s, []) for s in starts)
    for e in events:
        owner = max([s for s in starts if s <= e["ts"]], default=starts[0])
        runs[owner].append(e)
    for t0, ev in runs.items():
        t1 = max(e["ts"] + e["dur"] for e in ev)
        gpus = sorted({e["tid"] for e in ev if e["tid"].startswith("gpu")})  # "gpu N", "gpu N profiler"
        measuring = [g for g in gpus if not g.endswith("profiler")]
        print(f"== run at {t0 / 1e6:.2f} s: {len(measuring)} GPU worker(s), {1e-6 * (t1 - t0):.2f} s from its start to its last span")
        for e in sorted(ev, key=lambda e: e["ts"]):
            if e["tid"].startswith("coordinator") and not e["name"].startswith("the baseline re-timed"):
                print(f"  {1e-6 * (e['ts'] - t0):6.2f} +{1e-6 * e['dur']:.3f}  {e['tid']}: {e['name']}")
        for g in gpus:
            jobs = sorted((e for e in ev if e["tid"] == g and e["name"] == "job"), key=lambda e: e["ts"])
            if not jobs:
                continue
            first = jobs[0]
            phases = sorted((e for e in ev if e["tid"] == g and e["name"] != "job" and
                             first["ts"] <= e["ts"] < first["ts"] + first["dur"]), key=lambda e: e["ts"])
            busy = sum(j["dur"] for j in jobs)
            span = jobs[-1]["ts"] + jobs[-1]["dur"] - first["ts"]
            gaps = sorted(jobs[k + 1]["ts"] - jobs[k]["ts"] - jobs[k]["dur"] for k in range(len(jobs) - 1))
            print(f"  {g}: {len(jobs)} jobs; the first at {1e-6 * (first['ts'] - t0):.2f} s for {1e-6 * first['dur']:.3f} s ("
                  + ", ".join(f"{p['name']} {1e-6 * p['dur']:.3f}" for p in phases) + ")"
                  + f"; the last ends at {1e-6 * (jobs[-1]['ts'] + jobs[-1]['dur'] - t0):.2f} s; busy {1e-6 * busy:.2f} of {1e-6 * span:.2f} s"
                  + (f"; gaps {1e-6 * sum(gaps):.2f} s, median {1e-3 * gaps[len(gaps) // 2]:.2f} ms" if gaps else ""))
        for lane in sorted({e["tid"] for e in ev if e["tid"].startswith("lane")}):
            ms = sorted((e for e in ev if e["tid"] == lane), key=lambda e: e["ts"])
            gaps = sorted(ms[k + 1]["ts"] - ms[k]["ts"] - ms[k]["dur"] for k in range(len(ms) - 1))
            if gaps:
                print(f"  {lane}: {len(ms)} measurements from {1e-6 * (ms[0]['ts'] - t0):.2f} to "
                      f"{1e-6 * (ms[-1]['ts'] + ms[-1]['dur'] - t0):.2f} s; gaps {1e-6 * sum(gaps):.2f} s, median "
                      f"{1e-3 * gaps[len(gaps) // 2]:.2f} ms, 90th percentile {1e-3 * gaps[int(len(gaps) * 0.9)]:.2f} ms")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
