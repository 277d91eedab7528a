#!/usr/bin/env python3
"""How long sdpa_fp8's reference kernel (templates/reference/sdpa_ref.cu) runs on each of the profile's
problems, on this GPU (CuPy; median of 20 launches after 3 warm-ups, CUDA events). Run from the
repository root on the GPU machine."""
import json, statistics, sys
import cupy as cp

src = open("templates/reference/sdpa_ref.cu").read()
prof = json.load(open("profiles/sdpa_fp8.json"))
mod = cp.RawModule(code=src, options=("-DHEAD_DIM=64", "-DIN_FP8=1", "--std=c++17", "-I/usr/local/cuda/include"),
                   name_expressions=None)
fn = mod.get_function("sdpa_ref")
total = 0.0
for p in prof["problems"]:
    s = p["sizes"]; B, H, S, D, causal = s["B"], s["H"], s["S"], s["D"], s["causal"]
    n = B * H * S * D
    q = (cp.random.standard_normal(n, dtype=cp.float32)).astype(cp.uint8)  # any bytes: timing only
    k = q.copy(); v = q.copy(); o = cp.empty(n, dtype=cp.float16)
    args = (q, k, v, o, cp.float32(1), cp.float32(1), cp.float32(1), cp.float32(0.125), cp.int32(B), cp.int32(H), cp.int32(S), cp.int32(causal))
    grid, block, shm = (S, B * H, 1), (128, 1, 1), S * 4
    for _ in range(3): fn(grid, block, args, shared_mem=shm)
    times = []
    for _ in range(20):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(); fn(grid, block, args, shared_mem=shm); b.record(); b.synchronize()
        times.append(cp.cuda.get_elapsed_time(a, b))
    med = statistics.median(times)
    trials = len(p.get("green", {}).get("seeds", prof["gates"]["green"]["seeds"])) * p.get("green", {}).get("trials", prof["gates"]["green"]["trials"])
    total += med * trials
    print(f"{p['name']}: B={B} H={H} S={S} causal={causal}: {med:.3f} ms a launch, {trials} trials: {med * trials:.2f} ms", flush=True)
print(f"all trials: {total:.1f} ms")
