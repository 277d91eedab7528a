#!/usr/bin/env python3
"""Variants of the sdpa template side by side: same process, same inputs, rounds interleaved.

    python3 bench/ab.py ROWS.json [--shapes mission,mission512,long] [--rounds 5] [--compile-only]
    ncu --profile-from-start off ... python3 bench/ab.py ROWS.json --shapes long --profile-once

ROWS.json is a list of rows, each one configuration of one template:
    {"name": "fp16 64x128 st2", "profile": "profiles/sdpa_fp16_wgmma.json",
     "knobs": "TILE_M=64,STAGES=2",            # the profile's baseline for knobs not given
     "template": "templates/sdpa.cu",          # optional: another copy of the template
     "defines": {"SOME_MACRO": 1}}             # optional: extra -D (timing-only switches)
Paths are relative to the repository root. For every shape the rows are timed in turn, `rounds`
times over (so clock drift hits every row alike), each time as sdpa_check's time_graph (CUDA graph
of 20 launches, median of replays); the table gives the median over rounds and the spread
(max - min). Shapes up to S=512 also get a max-error look against fp32 SDPA (GREEN is
sdpa_check's job; rows with timing-only switches are expected to be wrong). --compile-only needs
no GPU: it prints registers, spills, shared memory and resident blocks per SM (H100 limits).
"""
import argparse
import json
import math
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import sdpa_check as chk  # noqa: E402

# name: (B, H, S, D, causal); a row runs on the shapes of its profile's HEAD_DIM
SHAPES = {"small": (1, 2, 64, 64, 0), "mission": (2, 8, 256, 64, 0), "mission512": (1, 8, 512, 64, 0),
          "long": (2, 16, 4096, 64, 0), "tail": (1, 4, 250, 64, 0), "long128": (2, 16, 4096, 128, 0),
          "prefill128": (1, 32, 2048, 128, 0), "long128_causal": (2, 16, 4096, 128, 1),
          "tail128": (1, 4, 250, 128, 0), "tail128_causal": (1, 4, 250, 128, 1)}


def build(row, work, i):
    p = chk.load_profile(os.path.join(ROOT, row["profile"]))
    cfg = chk.config_from_spec(p, row.get("knobs", ""), "%s (%s)" % (row["name"], row["profile"]))
    tpl = os.path.join(ROOT, row.get("template", "templates/sdpa.cu"))
    defines = {**p.get("defines", {}), **cfg, **row.get("defines", {})}
    ok, log, cub = chk.nvrtc_compile((tpl, defines, p.get("arch", "sm_90"), os.path.join(work, "r%d.cubin" % i)))
    if not ok:
        raise RuntimeError("%s does not compile:\n%s" % (row["name"], log[-3000:]))
    regs, spill, stack = chk.ptxas_figures(log)
    env = dict(p["_defines_num"], B=2, H=16, S=4096, D=int(p["defines"].get("HEAD_DIM", 64)), causal=0, **cfg)
    smem = int(chk.ev(p["launch"]["shared_bytes"], env))
    threads = 1
    for e in p["launch"]["block"]:
        threads *= int(chk.ev(e, env))
    # (NVRTC on the GPU machine sometimes returns no ptxas report: registers -1, residency unknown)
    per_sm = min(65536 // (((regs + 7) // 8 * 8) * threads), (228 * 1024) // (smem + 1024), 2048 // threads) if regs > 0 else -1
    return p, cfg, cub, dict(regs=regs, spill=spill, stack=stack, smem=smem, blocks_per_sm=per_sm)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows")
    ap.add_argument("--shapes", default="mission,mission512,long")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--compile-only", action="store_true")
    ap.add_argument("--profile-once", action="store_true",
                    help="no timing: each row once per shape between cudaProfilerStart/Stop, after a warm-up "
                    "(run under ncu --profile-from-start off)")
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "/tmp"), "ab.json"))
    a = ap.parse_args()
    rows = json.load(open(a.rows))
    work = tempfile.mkdtemp(prefix="ab_")
    built = []
    for i, row in enumerate(rows):
        p, cfg, cub, fig = build(row, work, i)
        built.append((row, p, cfg, cub, fig))
        print("%-34s regs %3d spill %d smem %6d blocks/SM %d  %s" % (row["name"], fig["regs"], fig["spill"] + fig["stack"],
                                                                     fig["smem"], fig["blocks_per_sm"], chk.cfg_key(cfg)),
              flush=True)
    if a.compile_only:
        return
    import cupy as cp
    import torch
    print("device:", torch.cuda.get_device_name(0), flush=True)
    runners = [chk.Runner(cp, torch, p, cfg, cub, p["kernel"]) for row, p, cfg, cub, fig in built]
    result = {r["name"]: dict(fig, times_us={}, spread_us={}, max_err={}) for r, _, _, _, fig in built}
    for sh in a.shapes.split(","):
        B, H, S, D, causal = SHAPES[sh]
        prob = {"name": sh, "sizes": {"B": B, "H": H, "S": S, "D": D, "causal": causal}}
        data = {}
        for fp8 in (0, 1):
            qs, desc, deq = chk.make_inputs(torch, prob, bool(fp8), 11)
            ref = chk.torch_ref(torch, deq, causal) if S <= 512 else None
            data[fp8] = (qs, desc, ref)
        O = torch.empty(B, H, S, D, device="cuda", dtype=torch.float16)
        scr = chk.scratch(torch, prob)
        fns = []
        for (row, p, cfg, cub, fig), run in zip(built, runners):
            if int(p["defines"].get("HEAD_DIM", 64)) != D:  # another head size's row: no figure here
                fns.append(None)
                continue
            qs, desc, ref = data[int(p["defines"].get("IN_FP8", 0))]
            bufs = qs + [O] + list(scr)
            fn = (lambda s, run=run, bufs=bufs, desc=desc:
                  run.launch(prob, bufs, desc, 1 / math.sqrt(D), stream=cp.cuda.ExternalStream(s.cuda_stream)))
            if ref is not None:
                O.fill_(float("nan"))
                fn(torch.cuda.current_stream())
                torch.cuda.synchronize()
                result[row["name"]]["max_err"][sh] = (O.float() - ref).abs().max().item()
            fns.append(fn)
        if a.profile_once:
            for fn in fns:
                if fn is None:
                    continue
                fn(torch.cuda.current_stream())
                torch.cuda.synchronize()
                torch.cuda.profiler.start()
                fn(torch.cuda.current_stream())
                torch.cuda.synchronize()
                torch.cuda.profiler.stop()
            continue
        times = [[] for _ in fns]
        for _ in range(a.rounds):
            for k, fn in enumerate(fns):
                if fn is not None:
                    times[k].append(chk.time_graph(torch, fn, reps=10 if S > 512 else 30))
        for (row, *_), ts in zip(built, times):
            if not ts:
                continue
            ts.sort()
            result[row["name"]]["times_us"][sh] = ts[len(ts) // 2]
            result[row["name"]]["spread_us"][sh] = ts[-1] - ts[0]
    if a.profile_once:
        return
    names = a.shapes.split(",")
    print("\n%-34s" % "row (µs, median over rounds [spread])" + "".join("%22s" % n for n in names))
    for row, *_ in built:
        r = result[row["name"]]
        cells = []
        for n in names:
            e = r["max_err"].get(n)
            bad = e is not None and not (e <= 0.02)  # NaN counts as bad
            if n not in r["times_us"]:  # another head size
                cells.append("-")
                continue
            cells.append("%9.2f [%4.2f]%s" % (r["times_us"][n], r["spread_us"][n], " err!" if bad else "     "))
        print("%-34s" % row["name"] + "".join("%22s" % c for c in cells), flush=True)
    with open(a.json, "w") as f:
        json.dump(result, f, indent=1)
    print("figures written to", a.json)


if __name__ == "__main__":
    main()
