#!/usr/bin/env python3
"""Old template against new, side by side in one process (timing; a quick max-error look, not GREEN).

    git show 418adee:templates/sdpa.cu > /tmp/sdpa_old.cu     # the template before 2026-11-23 pm
    python3 bench/variants.py /tmp/sdpa_old.cu                # on the GPU machine
    python3 bench/variants.py /tmp/sdpa_old.cu --compile-only # here: every variant compiles

Each row is one configuration compiled from one template; timings are sdpa_check's (CUDA graph of
20 launches, median), on small / mission / mission512 and, for the long rows, long.
"""
import json, math, os, sys, tempfile
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu")); sys.path.insert(0, os.path.join(ROOT, "bench"))
import sdpa_check as chk
compile_only = "--compile-only" in sys.argv
if not compile_only:
    import torch
    from peers import EvoKernel
work = tempfile.mkdtemp()
W16 = os.path.join(ROOT, "profiles", "sdpa_fp16_wgmma.json")
F16 = os.path.join(ROOT, "profiles", "sdpa_fp16.json")
F8 = os.path.join(ROOT, "profiles", "sdpa_fp8.json")
NEW = os.path.join(ROOT, "templates", "sdpa.cu")
args = [x for x in sys.argv[1:] if not x.startswith("--")]
if not args:
    sys.exit(__doc__)
OLD = os.path.abspath(args[0])
W2 = "MMA_PATH=2,TILE_M=64,TILE_N=128,NUM_WARPS=4,STAGES=3,SWIZZLE=2,SPLIT_KV=1,WG_PIPE=0"
W28 = W2.replace("TILE_M=64", "TILE_M=128").replace("NUM_WARPS=4", "NUM_WARPS=8")
W2L = W2.replace("STAGES=3", "STAGES=1")
M1 = "MMA_PATH=1,TILE_M=64,TILE_N=128,NUM_WARPS=4,STAGES=2,USE_CP_ASYNC=1,USE_WMMA_QK=1,USE_WMMA_PV=1,SWIZZLE=2,WARP_SPEC=0,SPLIT_KV=1"
F8M = M1.replace("TILE_M=64", "TILE_M=32").replace("NUM_WARPS=4", "NUM_WARPS=2").replace("WARP_SPEC=0", "WARP_SPEC=1")
F8L = M1.replace("TILE_M=64", "TILE_M=128").replace("NUM_WARPS=4", "NUM_WARPS=8").replace("STAGES=2", "STAGES=3")
sp = lambda x, n: x.replace("SPLIT_KV=1", "SPLIT_KV=%d" % n)
runs = [("w2 old", W16, W2, OLD), ("w2 new", W16, W2, NEW), ("w2 old split2", W16, sp(W2, 2), OLD),
        ("w2 new split2", W16, sp(W2, 2), NEW), ("w2 new split4", W16, sp(W2, 4), NEW),
        ("w2 tm128 new split2", W16, sp(W28, 2), NEW), ("w2 tm128 new split4", W16, sp(W28, 4), NEW),
        ("w2 new pipe", W16, W2 + ",WG_PIPE=1", NEW), ("w2 new pipe split2", W16, sp(W2, 2) + ",WG_PIPE=1", NEW),
        ("m1 old", F16, M1, OLD), ("m1 new", F16, M1, NEW), ("m1 new split2", F16, sp(M1, 2), NEW),
        ("m1 new split4", F16, sp(M1, 4), NEW),
        ("f8 old", F8, F8M, OLD), ("f8 new", F8, F8M, NEW),
        ("f8 tm64 new split2", F8, sp(F8M.replace("TILE_M=32", "TILE_M=64").replace("NUM_WARPS=2", "NUM_WARPS=4").replace("WARP_SPEC=1", "WARP_SPEC=0"), 2), NEW),
        ("f8 tm64 new split4", F8, sp(F8M.replace("TILE_M=32", "TILE_M=64").replace("NUM_WARPS=2", "NUM_WARPS=4").replace("WARP_SPEC=1", "WARP_SPEC=0"), 4), NEW),
        ("f8 tm64 ws new split2", F8, sp(F8M.replace("TILE_M=32", "TILE_M=64").replace("NUM_WARPS=2", "NUM_WARPS=4"), 2), NEW)]
longs = [("w2L old", W16, W2L, OLD), ("w2L new", W16, W2L, NEW), ("w2 tm128 st2 new", W16, W28.replace("STAGES=3", "STAGES=2"), NEW),
         ("m1L old", F16, F8L.replace("NUM_WARPS=8", "NUM_WARPS=4").replace("TILE_N=128", "TILE_N=64"), OLD),
         ("m1L new", F16, F8L.replace("NUM_WARPS=8", "NUM_WARPS=4").replace("TILE_N=128", "TILE_N=64"), NEW),
         ("f8L old", F8, F8L, OLD), ("f8L new", F8, F8L, NEW)]
if compile_only:
    for name, prof, spec, TPL in runs + longs:
        p = chk.load_profile(prof)
        cfg = dict(p["baseline"], **{k: int(v) for k, v in (kv.split("=") for kv in spec.split(","))})
        ok, log, cub = chk.nvrtc_compile((TPL, dict(p.get("defines", {}), **cfg), p.get("arch", "sm_90"), os.path.join(work, name.replace(" ", "_") + ".cubin")))
        print(name, "OK" if ok else "FAIL\n" + log[-2000:])
    sys.exit(0)
def timed(runs, shapes):
    for name, prof, spec, tpl in runs:
        try:
            k = EvoKernel(spec, tpl, prof, work)
        except Exception as e:
            print(name, "compile failed", str(e)[:300]); continue
        fp8 = bool(k.p["defines"].get("IN_FP8", 0))
        line = "%-22s" % name
        for sh, B, H, S in shapes:
            prob = {"name": sh, "sizes": {"B": B, "H": H, "S": S, "D": 64, "causal": 0}}
            qs, desc, deq = chk.make_inputs(torch, prob, fp8, 11)
            o = torch.empty(B, H, S, 64, device="cuda", dtype=torch.float16)
            scr = chk.scratch(torch, prob)
            fn = lambda stream: k(prob, qs + [o] + list(scr), desc, 1 / math.sqrt(64), k.cp.cuda.ExternalStream(stream.cuda_stream))
            fn(torch.cuda.current_stream()); torch.cuda.synchronize()
            if S <= 512:  # a quick correctness look (GREEN is sdpa_check's job)
                err = (o.float() - chk.torch_ref(torch, deq, 0)).abs().max().item()
                line += " [err %.1e]" % err
            line += " %s %7.2f" % (sh, chk.time_graph(torch, fn))
        print(line, flush=True)
timed(runs, [("small", 1, 2, 64), ("mission", 2, 8, 256), ("mission512", 1, 8, 512)])
timed(longs, [("long", 2, 16, 4096)])
