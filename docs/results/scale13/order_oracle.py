#!/usr/bin/env python3
"""What the order of compiles could give a run of the default strategy (scale13 section 3): the
compile seconds of the 68 evaluations each run of call R recorded, scheduled on 16 workers longest
first (LPT, Graham 1969: known compile seconds, the same candidates) and in 200 random orders (no
foresight), against the bound sum / 16. Usage: order_oracle.py conv1.db conv2.db conv3.db
(the databases in raw_r.tar.xz)."""
import heapq
import random
import sqlite3
import sys

WORKERS = 16


def makespan(jobs):
    free = [0.0] * WORKERS
    for j in jobs:
        heapq.heappush(free, heapq.heappop(free) + j)
    return max(free)


for path in sys.argv[1:]:
    c = [r[0] / 1000 for r in sqlite3.connect(path).execute(
        "select b.compile_ms from evaluations e join builds b using(build_key) where e.run_id = 1")]
    bound = sum(c) / WORKERS
    lpt = makespan(sorted(c, reverse=True))
    shuffled = []
    for seed in range(200):
        order = c[:]
        random.Random(seed).shuffle(order)
        shuffled.append(makespan(order))
    shuffled.sort()
    print(f"{path}: {len(c)} compiles, {sum(c):.1f} s, bound {bound:.2f} s, longest {max(c):.1f} s; "
          f"longest first {lpt:.2f} s ({lpt / bound:.2f}x); random order median {shuffled[100]:.2f} s "
          f"({shuffled[100] / bound:.2f}x), 10-90 % {shuffled[20] / bound:.2f}-{shuffled[180] / bound:.2f}x")
