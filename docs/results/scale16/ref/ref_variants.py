#!/usr/bin/env python3
"""sdpa_fp8's reference kernel and variants of it, side by side on this GPU (CuPy): for each of the
profile's problems, the median of 20 launches (CUDA events, after 3 warm-ups) and each variant's largest
difference from the first file's outputs on the same fp8 inputs (random e4m3 bytes, NaN codes left out).
    python3 docs/results/scale16/ref/ref_variants.py A.cu B.cu ...   (from the repository root)"""
import json, statistics, sys
import cupy as cp

prof = json.load(open("profiles/sdpa_fp8.json"))
files = sys.argv[1:]
fns = []
for f in files:
    mod = cp.RawModule(code=open(f).read(), options=("-DHEAD_DIM=64", "-DIN_FP8=1", "--std=c++17", "-I/usr/local/cuda/include"))
    fns.append(mod.get_function("sdpa_ref"))
totals = [0.0] * len(files)
for p in prof["problems"]:
    s = p["sizes"]; B, H, S, D, causal = s["B"], s["H"], s["S"], s["D"], s["causal"]
    n = B * H * S * D
    rs = cp.random.RandomState(7)
    def fp8():
        x = rs.randint(0, 0x48, size=n, dtype=cp.int32)  # magnitudes up to 2^1: e4m3 exponent field <= 8
        sign = rs.randint(0, 2, size=n, dtype=cp.int32) << 7
        return (x | sign).astype(cp.uint8)
    q, k, v = fp8(), fp8(), fp8()
    trials = len(p.get("green", {}).get("seeds", prof["gates"]["green"]["seeds"])) * p.get("green", {}).get("trials", prof["gates"]["green"]["trials"])
    outs, line = [], f"{p['name']} (S={S}, causal={causal}, {trials} trials):"
    for vi, fn in enumerate(fns):
        o = cp.full(n, cp.nan, dtype=cp.float16)
        args = (q, k, v, o, cp.float32(1.5), cp.float32(0.75), cp.float32(1.25), cp.float32(0.125), cp.int32(B), cp.int32(H), cp.int32(S), cp.int32(causal))
        grid, block, shm = (S, B * H, 1), (128, 1, 1), S * 4
        fn(grid, block, args, shared_mem=shm); cp.cuda.Device().synchronize()
        outs.append(o.astype(cp.float32))
        for _ in range(3): fn(grid, block, args, shared_mem=shm)
        times = []
        for _ in range(20):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            a.record(); fn(grid, block, args, shared_mem=shm); b.record(); b.synchronize()
            times.append(cp.cuda.get_elapsed_time(a, b))
        med = statistics.median(times); totals[vi] += med * trials
        diff = float(cp.max(cp.abs(outs[vi] - outs[0]))) if vi else 0.0
        nan = int(cp.isnan(outs[vi]).sum())
        line += f"  [{files[vi].split('/')[-1]}] {med:.3f} ms, max |diff| {diff:.3g}, NaN {nan}, max |O| {float(cp.max(cp.abs(outs[vi]))):.3g}"
    print(line, flush=True)
print("all trials: " + ", ".join(f"{f.split('/')[-1]} {t:.1f} ms" for f, t in zip(files, totals)))
