#!/usr/bin/env python3
"""The PyTorch module of `evo export best --dispatch --torch`, on the GPU (issue 19).

    python3 tests/gpu/torch_check.py EXPORT_DIR [--out check.json] [--rounds 5]

For every <profile>_dispatch.json in EXPORT_DIR (written with --torch):
  GREEN  each tuned shape, and shapes between them, run through evo_torch (the dispatch picks the
         kernel) on torch tensors and compared with SDPA in fp64 math over the same (dequantised)
         inputs, against the profile's own GREEN thresholds (gates.green). The output buffer is
         filled with NaN first, so a kernel that writes nothing fails.
  FAST   on three shapes, evo's fp16 and fp8 modules timed beside PyTorch's cuDNN SDPA (fp16):
         a CUDA graph of 20 calls each, replayed, median per call; the peers timed in turn, --rounds
         times over, each reporting its median over rounds (tests/gpu/sdpa_check.py time_graph).
         The eager per-call time (the module's Python and ctypes path, no graph) is reported too.
Exit status 0 only when every GREEN check passes. Results: a Markdown table on stdout and --out.
"""
import argparse
import glob
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import sdpa_check as chk  # noqa: E402  (inputs, reference, error figures, the timing method)

import torch  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

TIMED = [("mission", 2, 8, 256, 64), ("mission512", 1, 8, 512, 64), ("long", 2, 16, 4096, 64)]
BETWEEN = [(1, 4, 384, 64, 0), (2, 8, 1024, 64, 0), (1, 4, 300, 64, 1)]  # shapes no problem names


def green_thresholds(meta):
    path = os.path.join(ROOT, "profiles", meta["profile_path"])
    with open(path) as f:
        return json.load(f)["gates"]["green"]


def call(attn, qs, desc, causal, fp8, out=None):
    kw = {"causal": causal}
    if fp8:
        kw.update(q_descale=desc[0], k_descale=desc[1], v_descale=desc[2])
    if out is not None:
        kw["O"] = out
    return attn(*qs, **kw)


def check_green(evo_torch, path, fp8, green, report):
    attn = evo_torch.load(path)
    shapes = [tuple(int(e["sizes"][k]) for k in ("B", "H", "S", "D", "causal")) for e in attn.meta["entries"]]
    ok = True
    for B, H, S, D, causal in shapes + [s for s in BETWEEN if s not in shapes]:
        prob = {"sizes": {"B": B, "H": H, "S": S, "D": D, "causal": causal}}
        sizes = {k: float(v) for k, v in prob["sizes"].items()}
        i = attn.pick(sizes)
        row = {"dispatch": os.path.basename(path), "shape": [B, H, S, D, causal],
               "kernel": None if i is None else attn.kernels[i].name,
               "tuned_for": None if i is None else attn.problems[i]}
        if i is None:
            row.update(passed=False, why="no kernel's constraints hold")
            ok = False
            report.append(row)
            continue
        worst = None
        for seed in green.get("seeds", [0]):
            qs, desc, deq = chk.make_inputs(torch, prob, fp8, seed)
            ref = chk.torch_ref(torch, deq, causal)
            out = torch.full((B, H, S, D), float("nan"), dtype=torch.float16, device="cuda")
            got = call(attn, qs, desc, causal, fp8, out=out)
            torch.cuda.synchronize()
            assert got is out, "the module returned another tensor than the output it was given"
            fig = chk.error_figures(torch, out, ref, green["atol"], green["rtol"])
            fig["passed"] = chk.passes(fig, green)
            if worst is None or not fig["passed"] or fig["max_abs"] > worst["max_abs"]:
                worst = fig
            # The module allocating the output itself gives the same figures.
            fresh = call(attn, qs, desc, causal, fp8)
            torch.cuda.synchronize()
            if not torch.equal(fresh, out):
                worst = dict(worst, passed=False, why="an allocated output differs from a given one")
        row.update(worst)
        ok &= bool(row["passed"])
        report.append(row)
    return ok


def time_peers(modules, rounds):
    rows = []
    for name, B, H, S, D in TIMED:
        prob = {"sizes": {"B": B, "H": H, "S": S, "D": D, "causal": 0}}
        peers = {}
        q16, _, _ = chk.make_inputs(torch, prob, False, 0)
        o16 = torch.empty_like(q16[0])

        def cudnn(stream, q=q16):
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                torch.nn.functional.scaled_dot_product_attention(*q)
        peers["torch-cudnn fp16"] = cudnn
        for label, (attn, fp8) in modules.items():
            qs, desc, _ = chk.make_inputs(torch, prob, fp8, 0)
            out = torch.empty(B, H, S, D, dtype=torch.float16, device="cuda")
            peers[label] = (lambda attn, qs, desc, fp8, out: lambda stream: call(attn, qs, desc, 0, fp8, out))(
                attn, qs, desc, fp8, out)
        times = {k: [] for k in peers}
        for _ in range(rounds):
            for k, fn in peers.items():
                times[k].append(chk.time_graph(torch, fn))
        eager = {}
        for k, fn in peers.items():
            for _ in range(5):
                fn(None)
            torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(200):
                fn(None)
            b.record()
            b.synchronize()
            eager[k] = a.elapsed_time(b) * 1000 / 200
        flop = 4.0 * B * H * S * S * D
        base = statistics.median(times["torch-cudnn fp16"])
        for k in peers:
            med = statistics.median(times[k])
            rows.append({"shape": name, "sizes": [B, H, S, D], "peer": k, "median_us": med,
                         "rounds_us": times[k], "vs_cudnn_time": med / base, "tflops": flop / med / 1e6,
                         "eager_us_per_call": eager[k]})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("export_dir")
    ap.add_argument("--out")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    sys.path.insert(0, a.export_dir)
    import evo_torch

    tables = sorted(glob.glob(os.path.join(a.export_dir, "*_dispatch.json")))
    if not tables:
        sys.exit(f"{a.export_dir}: no *_dispatch.json (export with --dispatch --torch)")
    green_rows, ok, modules = [], True, {}
    for path in tables:
        attn = evo_torch.load(path)
        first = attn.kernels[0].meta
        fp8 = next(b for b in first["buffers"] if b["name"] == "Q")["torch_dtype"].startswith("float8")
        ok &= check_green(evo_torch, path, fp8, green_thresholds(first), green_rows)
        modules[f"evo {first['profile']}"] = (attn, fp8)
    timing = time_peers(modules, a.rounds)
    device = torch.cuda.get_device_name()
    print(f"device: {device}, torch {torch.__version__}\n")
    print("| dispatch | shape (B,H,S,D,causal) | kernel (tuned for) | max abs | mean abs | bad % | GREEN |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in green_rows:
        print(f"| {r['dispatch']} | {tuple(r['shape'])} | {r['kernel']} ({r['tuned_for']}) | {r.get('max_abs', float('nan')):.4g} "
              f"| {r.get('mean_abs', float('nan')):.3g} | {r.get('bad_pct', 100):.3g} | {'pass' if r['passed'] else 'FAIL'} |")
    print("\n| shape | peer | median µs | × cuDNN time | TFLOP/s | eager µs/call |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in timing:
        print(f"| {r['shape']} {tuple(r['sizes'])} | {r['peer']} | {r['median_us']:.2f} | {r['vs_cudnn_time']:.2f} "
              f"| {r['tflops']:.0f} | {r['eager_us_per_call']:.1f} |")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"device": device, "torch": torch.__version__, "rounds": a.rounds, "green": green_rows,
                       "timing": timing, "all_green": ok}, f, indent=1)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
