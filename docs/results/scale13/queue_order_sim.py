#!/usr/bin/env python3
"""Could the order of the compile pool's queue bring a 68-evaluation run of a compile-heavy space
to its bound (scale13 section 3)? A model of the loop: 16 compile workers, 33 candidates in flight,
the budget's end (extra candidates on idle workers, those unfinished dropped), proposals drawn
uniformly from Kernel Tuner's convolution as call S compiled it (its compile seconds, from
schedule.db in raw_s.tar.xz), 40 seeds. The queue's order: FIFO (today); the longest predicted
first (an additive model of log compile seconds over the knobs' values, learnt online, running
compiles longer than the median counted at their seconds so far), the shortest once LATE or fewer
evaluations are left; the same with the compile seconds known (oracle).
Usage: queue_order_sim.py schedule.db"""
import sqlite3, json, random, sys
import numpy as np
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select c.config_json, b.compile_ms, e.status from evaluations e join builds b using(build_key) join candidates c on c.config_hash=e.config_hash and c.profile=e.profile").fetchall()
cfgs = [json.loads(r[0]) for r in rows]; comp = np.array([r[1] / 1000 for r in rows])
# scale to the default-strategy GPU runs' medians (this sweep's compiles ran 16 at a time too)
knobs = sorted(cfgs[0]); vals = {k: sorted(set(c[k] for c in cfgs)) for k in knobs}
X = np.array([[vals[k].index(c[k]) for k in knobs] for c in cfgs])
N = len(cfgs); W = 16; AHEAD = 33; BUDGET = 68

def fit(idx, y):
    # additive model in log seconds over knob values
    mu = y.mean(); eff = [np.zeros(len(vals[k])) for k in knobs]
    for _ in range(5):
        for j, k in enumerate(knobs):
            r = y - mu - sum(eff[jj][X[idx, jj]] for jj in range(len(knobs)) if jj != j)
            e = np.zeros(len(vals[k])); n = np.zeros(len(vals[k]))
            np.add.at(e, X[idx, j], r); np.add.at(n, X[idx, j], 1)
            eff[j] = np.where(n > 0, e / np.maximum(n, 1) * n / (n + 1), 0)  # shrunk
    return lambda ii: mu + sum(eff[j][X[ii, j]] for j in range(len(knobs)))

def run(policy, seed):
    rng = random.Random(seed)
    order = list(range(N)); rng.shuffle(order)
    nxt = 0; t = 0.0
    queued = []; running = {}  # id -> (start, end)
    done = []; recorded = 0; in_flight = 0; rec_compile = 0.0; dropped = 0.0
    events = []
    model = None
    def propose():
        nonlocal nxt
        i = order[nxt]; nxt += 1; return i
    def pick():
        if policy == 'fifo' or (model is None and policy != 'oracle'):
            return queued.pop(0)
        spec = BUDGET - recorded <= LATE
        key = (lambda i: comp[i]) if policy == 'oracle' else (lambda i: model(np.array([i]))[0])
        j = (min if spec else max)(range(len(queued)), key=lambda q: key(queued[q]))
        return queued.pop(j)
    while True:
        # top up: keep AHEAD in flight while room
        room = BUDGET - recorded - (len(queued) + len(running))
        while room > 0 and len(queued) + len(running) < AHEAD:
            queued.append(propose()); room -= 1
        # speculation: idle workers and nothing else to do
        while len(running) + len(queued) < W and recorded + len(running) + len(queued) >= BUDGET and recorded < BUDGET:
            queued.append(propose())
        while len(running) < W and queued:
            i = pick(); running[i] = (t, t + comp[i])
        # next completion
        i, (s, e) = min(running.items(), key=lambda kv: kv[1][1])
        t = e; del running[i]
        recorded += 1; rec_compile += comp[i]; done.append(i)
        if policy == 'model' and len(done) >= 8 and len(done) % 4 == 0:
            idx = np.array(done + list(running)); y = np.log(np.array([comp[d] for d in done] + [max(t - running[r][0], 0.01) for r in running]))
            # censored: running ones count as at least their elapsed (only if longer than median)
            med = np.median(np.log([comp[d] for d in done]))
            keep = [k for k in range(len(idx)) if k < len(done) or y[k] > med]
            model = fit(idx[keep], y[keep])
        if recorded >= BUDGET:
            dropped = sum(t - s for (s, e) in running.values())
            return t, rec_compile / W, dropped
for LATE, pol in [(0, 'fifo')] + [(late, p) for late in (0, 32, 68) for p in ('model', 'oracle')]:
    r = [run(pol, s) for s in range(40)]
    ratio = [w / b for w, b, d in r]
    print(f"{pol:6s} shortest once {LATE:2d} are left: wall / recorded bound median {np.median(ratio):.2f} "
          f"(10-90 % {np.percentile(ratio, 10):.2f}-{np.percentile(ratio, 90):.2f}), wall {np.median([w for w, b, d in r]):.1f} s, "
          f"dropped {np.median([d for w, b, d in r]):.0f} compile s")
