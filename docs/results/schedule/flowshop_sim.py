#!/usr/bin/env python3
"""Sweep orders for a compile-heavy exhaustive run, simulated (docs/results/pipeline.md, section 8).

The run loop as a two-stage pipeline: W compile workers take candidates in the order proposed,
keeping 2W+1 in flight; one GPU measures each candidate that passed its CPU stages for G seconds,
oldest first. Compile seconds and failures are those a landscape recorded (evo export-landscape
keeps each configuration's `seconds`). Prints the wall of each order against the bound
max(compile seconds / W, GPU seconds).

  /usr/bin/python3 docs/results/schedule/flowshop_sim.py LANDSCAPE.json [W] [G]
"""
import collections
import heapq
import json
import sys


def wall(jobs, order, workers, gpu_s, ahead=None):
    """Event by event: a candidate is in flight from its proposal until its result is recorded
    (after the GPU, for one that reaches it), and the loop proposes whenever one is recorded."""
    ahead = ahead or 2 * workers + 1
    free = [0.0] * workers       # when each worker is next free
    events = []                  # (time, kind, job): kind 0 compile ends, 1 GPU ends
    ready = collections.deque()  # compiled, waiting for the GPU
    gpu_busy_until, gpu_idle = 0.0, True
    t, nxt, in_flight, done, last = 0.0, 0, 0, 0, 0.0
    while done < len(order):
        while in_flight < ahead and nxt < len(order):
            k = order[nxt]
            nxt += 1
            in_flight += 1
            start = max(heapq.heappop(free), t)
            heapq.heappush(free, start + jobs[k][0])
            heapq.heappush(events, (start + jobs[k][0], 0, k))
        t, kind, k = heapq.heappop(events)
        if kind == 0 and jobs[k][1]:
            ready.append(k)
        else:  # a result: compiled and failed, or measured
            in_flight -= 1
            done += 1
            last = t
            if kind == 1:
                gpu_idle = True
        if gpu_idle and ready:
            heapq.heappush(events, (t + gpu_s, 1, ready.popleft()))
            gpu_idle = False
    return last


def main(path, workers=64, gpu_s=0.15):
    land = json.load(open(path))
    points = land.get("configs") or land.get("points")
    jobs = [(p["seconds"]["compile"], p["status"] not in ("compile_error", "static_rejected")) for p in points]
    bound = max(sum(c for c, _ in jobs) / workers, gpu_s * sum(g for _, g in jobs))
    lexicographic = list(range(len(jobs)))
    reaches = [k for k in lexicographic if jobs[k][1]]
    fails = [k for k in lexicographic if not jobs[k][1]]
    # Johnson's rule for two machines in a row: what reaches the GPU, shortest compile first; what
    # fails before it, longest compile first.
    johnson = sorted(reaches, key=lambda k: jobs[k][0]) + sorted(fails, key=lambda k: -jobs[k][0])
    longest_first = sorted(lexicographic, key=lambda k: -jobs[k][0])
    print(f"{len(jobs)} configurations, {workers} workers, {gpu_s} s of GPU each: bound {bound:.1f} s")
    for ahead in (2 * workers + 1, 8 * workers, len(jobs)):
        for name, order in (("lexicographic", lexicographic), ("Johnson's rule, compile seconds known", johnson),
                            ("longest compile first", longest_first)):
            w = wall(jobs, order, workers, gpu_s, ahead)
            print(f"  {ahead} in flight, {name}: {w:.1f} s ({w / bound:.2f}x)")


if __name__ == "__main__":
    main(sys.argv[1], *(float(a) if "." in a else int(a) for a in sys.argv[2:]))
