#!/usr/bin/env python3
"""Where a FlashAttention-3 (MMA_PATH=3) step spends its clocks: each warpgroup's timeline, from the template's
SDPA_TRACE stamps (clock64 of thread 0 of every warpgroup, per ring position, in the first N blocks).

    python3 bench/timeline.py ROWS.json [--shape long128] [--blocks 4] [--json OUT.json]

ROWS.json as for bench/ab.py (rows of MMA_PATH=3 configurations). Each row is built with -DSDPA_TRACE=N,
run once to warm up and once traced. Per consumer warpgroup and step (medians over the steady steps, the
first two and the last two of each item left out), in SM clocks:
  operands  the previous step's end to K_j and V_{j-1} landed (the producer is behind)
  turn      waiting for the turn to issue (PINGPONG)
  issue     issuing Q·K_jᵀ and P_{j-1}·V_{j-1}
  S wait    issued to S_j landed (WG_PIPE=0: to both products landed)
  softmax   softmax j (masking, max, exp2, sums)
  PV wait   softmax done to P·V landed (WG_PIPE=1)
  tail      O's rescale and P's pack
  step      one step to the next
PERSIST=1 also gets the clocks between an item's last step and the next item's first (the epilogue and the next
item's first tile, with nothing overlapped), and that boundary event by event (the template's TB_* stamps). And, over the same window, the share of clocks in which 0, 1, 2 (3) warpgroups are inside their softmax, and the
tensor work a step needs at the dense peak (fp16 4096, e4m3 8192 FLOP a clock an SM) against the step's clocks.
The stamps cost a few instructions a step and stop ptxas moving code across them: the step is slower than untraced
(compare its `step` with bench/ab.py's time), but the proportions are the kernel's.
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import ab  # noqa: E402
import sdpa_check as chk  # noqa: E402

READY, TURN, ISSUED, S, SOFTMAX, PV, END = range(7)
SEGMENTS = ("operands", "turn", "issue", "S wait", "softmax", "PV wait", "tail")


def step_segments(ev, prev_end, pipe):
    """Clocks of each segment of one consumer step; ev: its 8 stamps."""
    seg = {"operands": ev[READY] - prev_end if prev_end else None, "turn": ev[TURN] - ev[READY],
           "issue": ev[ISSUED] - ev[TURN]}
    if pipe:
        seg.update({"S wait": ev[S] - ev[ISSUED], "softmax": ev[SOFTMAX] - ev[S], "PV wait": ev[PV] - ev[SOFTMAX],
                    "tail": ev[END] - ev[PV]})
    else:
        seg.update({"S wait": ev[PV] - ev[ISSUED], "softmax": ev[SOFTMAX] - ev[PV], "PV wait": 0,
                    "tail": ev[END] - ev[SOFTMAX]})
    return seg


def analyse(tr, nwg, cfg, n_tiles, items_per_block):
    """tr: [blocks][4][64][8] stamps (nested lists). Returns the medians and the softmax concurrency shares."""
    pipe = int(cfg.get("WG_PIPE", 0))
    segs = {k: [] for k in SEGMENTS + ("step",)}
    share = [0] * (nwg + 1)
    for b in range(len(tr)):
        steady = []  # ring positions of steady steps: not the first two or last two of an item
        for it in range(items_per_block):
            first = it * n_tiles
            steady += [g for g in range(first + 2, first + n_tiles - 2) if g < 63]
        if not steady:
            continue
        for w in range(nwg):
            e = tr[b][w]
            for g in steady:
                if e[g][READY] == 0 or e[g][END] == 0:
                    continue
                seg = step_segments([int(x) for x in e[g]], int(e[g - 1][END]), pipe)
                for k, v in seg.items():
                    if v is not None:
                        segs[k].append(v)
                if e[g + 1][READY]:
                    segs["step"].append(int(e[g + 1][READY]) - int(e[g][READY]))
        # softmax concurrency over [first steady READY of wg 0, last steady END of wg 0]
        t0, t1 = int(tr[b][0][steady[0]][READY]), int(tr[b][0][steady[-1]][END])
        if not t0 or t1 <= t0:
            continue
        marks = []
        for w in range(nwg):
            for g in range(64):
                a, z = int(tr[b][w][g][S if pipe else PV]), int(tr[b][w][g][SOFTMAX])
                if a and z > a:
                    marks += [(max(a, t0), 1), (min(z, t1), -1)] if z > t0 and a < t1 else []
        marks.sort()
        inside, last = 0, t0
        for t, d in marks:
            share[min(inside, nwg)] += t - last
            inside, last = inside + d, t
        share[min(inside, nwg)] += t1 - last
    med = {k: (statistics.median(v) if v else float("nan")) for k, v in segs.items()}
    tot = sum(share) or 1
    return med, [s / tot for s in share], len(segs["step"])


def producer(tr, nwg, n_stamped):
    """Medians over the producer's tiles: waiting for a free stage (and issuing the TMA), rewriting V (fp8), a whole tile."""
    wait, rew, tile = [], [], []
    for b in range(len(tr)):
        e = tr[b][nwg]
        for g in range(2, min(n_stamped, 64) - 1):
            if e[g][READY] and e[g][ISSUED]:
                wait.append(int(e[g][TURN]) - int(e[g][READY]))
                rew.append(int(e[g][ISSUED]) - int(e[g][TURN]))
                if e[g + 1][READY]:
                    tile.append(int(e[g + 1][READY]) - int(e[g][READY]))
    m = lambda v: statistics.median(v) if v else float("nan")
    return {"stage wait": m(wait), "rewrite": m(rew), "tile": m(tile)}


def item_gap(tr, n_tiles, items_per_block):
    """PERSIST=1: clocks from an item's last step (P packed) to the next item's first traced step (its operands in),
    warpgroup 0, median over the blocks: the last P·V, the epilogue, the next item's first Q·Kᵀ and softmax."""
    gaps = []
    for b in range(len(tr)):
        e = tr[b][0]
        for k in range(items_per_block - 1):
            last, nxt = (k + 1) * n_tiles - 1, (k + 1) * n_tiles + 1
            if nxt < 64 and e[last][END] and e[nxt][READY]:
                gaps.append(int(e[nxt][READY]) - int(e[last][END]))
    return statistics.median(gaps) if gaps else float("nan")


# the template's TB_PV_ISSUED .. TB_P (slots 1 .. 7 of the next item's first ring position; TB_END, 0, is where the
# last step's wait starts and is left out), and the producer's TP_Q_WAIT, TP_Q_ISSUED
BOUNDARY = ("last P·V issued", "P·V landed", "O stored", "next Q in", "K_0 in", "S_0 landed", "P_0 packed")
TB_SLOTS = range(1, 8)
TP_Q_WAIT, TP_Q_ISSUED = 3, 4


def boundary(tr, nwg, n_tiles, items_per_block):
    """PERSIST=1: an item's boundary event by event (the template's TB_* stamps at the ring position of the next item's
    first tile), in clocks after the finished item's last step packed its P, medians over blocks and consumer
    warpgroups; `next step` is the next item's second tile's operands in. The producer's `Q copies` start (after the
    wait for the buffer) and end, on the same clock (negative: before the last step ended)."""
    rel = {k: [] for k in BOUNDARY + ("next step", "producer: Q buffer wait from", "producer: Q copies issued")}
    for b in range(len(tr)):
        for k in range(1, items_per_block):
            gn = k * n_tiles
            if gn + 1 >= 64:
                break
            for w in range(nwg):
                e = tr[b][w]
                t0 = int(e[gn - 1][END])
                if not t0:
                    continue
                for name, slot in zip(BOUNDARY, TB_SLOTS):
                    if int(e[gn][slot]):
                        rel[name].append(int(e[gn][slot]) - t0)
                if int(e[gn + 1][READY]):
                    rel["next step"].append(int(e[gn + 1][READY]) - t0)
                if w == 0:
                    pq = tr[b][nwg][gn]
                    if int(pq[TP_Q_WAIT]) and int(pq[TP_Q_ISSUED]):
                        rel["producer: Q buffer wait from"].append(int(pq[TP_Q_WAIT]) - t0)
                        rel["producer: Q copies issued"].append(int(pq[TP_Q_ISSUED]) - t0)
    return {k: statistics.median(v) for k, v in rel.items() if v}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows")
    ap.add_argument("--shape", default="long128")
    ap.add_argument("--blocks", type=int, default=4, help="blocks traced (the first N by linear index)")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "/tmp"), "timeline.json"))
    a = ap.parse_args()
    rows = json.load(open(a.rows))
    work = tempfile.mkdtemp(prefix="timeline_")
    import cupy as cp
    import torch
    B, H, S_, D, causal = ab.SHAPES[a.shape]
    prob = {"name": a.shape, "sizes": {"B": B, "H": H, "S": S_, "D": D, "causal": causal}}
    print("device:", torch.cuda.get_device_name(0), " shape", a.shape, prob["sizes"], flush=True)
    out = {}
    hdr = "%-40s" % "row (SM clocks, medians)" + "".join("%9s" % k for k in SEGMENTS + ("step",))
    lines = [hdr]
    for i, row in enumerate(rows):
        row = dict(row, defines={**row.get("defines", {}), "SDPA_TRACE": a.blocks})
        p, cfg, cub, fig = ab.build(row, work, i)
        if int(cfg.get("MMA_PATH", 0)) != 3 or int(p["defines"].get("HEAD_DIM", 64)) != D:
            print("%s: not an MMA_PATH=3 configuration of head size %d, skipped" % (row["name"], D))
            continue
        fp8 = int(p["defines"].get("IN_FP8", 0))
        qs, desc, _ = chk.make_inputs(torch, prob, bool(fp8), 11)
        O = torch.empty(B, H, S_, D, device="cuda", dtype=torch.float16)
        run = chk.Runner(cp, torch, p, cfg, cub, p["kernel"])
        bufs = qs + [O] + list(chk.scratch(torch, prob))
        run.launch(prob, bufs, desc, 1 / math.sqrt(D))
        torch.cuda.synchronize()
        ptr = run.mod.get_global("sdpa_trace")
        tr = cp.ndarray((a.blocks, 4, 64, 8), dtype=cp.uint64, memptr=ptr)
        tr.fill(0)
        run.launch(prob, bufs, desc, 1 / math.sqrt(D))
        torch.cuda.synchronize()
        host = cp.asnumpy(tr).tolist()
        tm, tn, nwg = int(cfg["TILE_M"]), int(cfg["TILE_N"]), int(cfg["NUM_WARPS"]) // 4
        n_tiles = math.ceil(S_ / tn)
        grid, _, _ = run.geometry(prob)
        items = math.ceil(S_ / tm) * B * H
        per_block = math.ceil(items / grid[0]) if int(cfg.get("PERSIST", 0)) else 1
        per_block = min(per_block, 64 // n_tiles) if n_tiles else 1
        med, share, n = analyse(host, nwg, cfg, n_tiles, per_block)
        qk_rate, pv_rate = (8192 if fp8 else 4096), (8192 if int(cfg.get("PV_FP8", 0)) else 4096)
        tensor = nwg * (2 * 64 * tn * D / qk_rate + 2 * 64 * tn * D / pv_rate)
        prod = producer(host, nwg, n_tiles * per_block)
        gap = item_gap(host, n_tiles, per_block)
        bnd = boundary(host, nwg, n_tiles, per_block)
        out[row["name"]] = dict(cfg=cfg, medians=med, softmax_concurrency=share, steps=n, tensor_clocks_per_step=tensor,
                                producer=prod, item_gap=gap, boundary=bnd, stamps=host)
        lines.append("%-40s" % row["name"][:40] + "".join("%9.0f" % med[k] for k in SEGMENTS + ("step",)))
        lines.append("%-40s" % "" + "  softmax in 0..%d warpgroups at once: %s;  tensor work %d of %d clocks a step (%.0f %%); %d steps"
                     % (nwg, " / ".join("%.0f %%" % (100 * s) for s in share), tensor, med["step"],
                        100 * tensor / med["step"] if med["step"] == med["step"] else float("nan"), n))
        lines.append("%-40s" % "" + "  producer a tile: %.0f clocks waiting for a free stage, %.0f rewriting V, %.0f a tile in all"
                     % (prod["stage wait"], prod["rewrite"], prod["tile"])
                     + ("; between items %.0f clocks (%.1f steps)" % (gap, gap / med["step"]) if gap == gap else ""))
        if bnd:
            lines.append("%-40s" % "" + "  boundary, clocks after the last step: "
                         + ", ".join("%s %+.0f" % (k, v) for k, v in sorted(bnd.items(), key=lambda kv: kv[1])))
        print("\n".join(lines[-4 if bnd else -3:]), flush=True)
    json.dump(out, open(a.json, "w"))
    print("\n" + "\n".join(lines))
    print("stamps written to", a.json)


if __name__ == "__main__":
    main()
