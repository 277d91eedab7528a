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
import math
import sys


def wall(jobs, order, workers, gpu_s):
    free = [0.0] * workers
    compiling, done = [], 0
    submit_at, gpu_free, last, nxt, in_flight = 0.0, 0.0, 0.0, 0, 0
    while done < len(order):
        while in_flight < 2 * workers + 1 and nxt < len(order):
            c, reaches_gpu = jobs[order[nxt]]
            nxt += 1
            in_flight += 1
            start = max(heapq.heappop(free), submit_at)
            heapq.heappush(free, start + c)
            heapq.heappush(compiling, (start + c, reaches_gpu))
        end, reaches_gpu = heapq.heappop(compiling)
        if reaches_gpu:
            gpu_free = max(end, gpu_free) + gpu_s
            finished = gpu_free
        else:
            finished = end
        submit_at = max(submit_at, end)  # the next proposal goes in once a result is back
        in_flight -= 1
        done += 1
        last = max(last, finished)
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
    for name, order in (("lexicographic", lexicographic), ("Johnson's rule, compile seconds known", johnson),
                        ("longest compile first", longest_first)):
        w = wall(jobs, order, workers, gpu_s)
        print(f"  {name}: {w:.1f} s ({w / bound:.2f}x)")


if __name__ == "__main__":
    main(sys.argv[1], *(float(a) if "." in a else int(a) for a in sys.argv[2:]))
