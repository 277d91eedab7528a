#!/usr/bin/env python3
"""GPU correctness sweep of templates/sdpa.cu over a whole profile, before evo's own GPU gates.

    python3 tests/gpu/sdpa_check.py profiles/sdpa_fp8.json [--limit N] [--time K] [--compile-only]
    python3 tests/gpu/sdpa_check.py profiles/sdpa_fp8_wgmma.json --only V_REGS=1/2   # a slice of the space

A. Enumerate the profile's knob space and keep the configurations whose constraints hold on every
   problem (the constraints are muParser text; the few operators they use are translated to Python).
B. Compile every valid configuration with NVRTC (ctypes on libnvrtc, one process per core: NVRTC
   serialises compiles inside one process), with the ptxas report, so spills are counted too.
C. Run each configuration on every problem of the profile (causal, tail S=250 ...) against PyTorch's
   SDPA in fp32 over the same dequantised inputs, output poisoned with NaN before each launch;
   the profile's GREEN thresholds decide pass or fail. The reference kernel
   (templates/reference/sdpa_ref.cu) is checked against the same PyTorch result.
D. Time the fastest passing configurations on the objective and the other problems (CUDA graph of
   20 launches, median of replays) and print the table last.

--compile-only needs no GPU (and no CuPy / PyTorch): it stops after B.
"""
import argparse
import ctypes
import ctypes.util
import glob
import itertools
import json
import math
import multiprocessing as mp
import os
import re
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------------------------------------
# A. profile, expressions, knob space
# ---------------------------------------------------------------------------------------------
def cdiv(a, b):
    return -(-int(a) // int(b))


EXPR_FUNCS = {"cdiv": cdiv, "min": min, "max": max, "ceil": math.ceil, "floor": math.floor,
              "sqrt": math.sqrt, "log2": math.log2, "log2i": lambda x: int(math.log2(x))}


def to_python(expr):
    """muParser -> Python for the subset evo's sdpa profiles use (no ternary, no '^', no '!' alone)."""
    if "?" in expr or "^" in expr or re.search(r"!(?!=)", expr):
        raise ValueError("expression uses ?:, ^ or ! which this checker does not translate: " + expr)
    return expr.replace("&&", " and ").replace("||", " or ")


def ev(expr, env):
    if isinstance(expr, (int, float)):
        return expr
    return eval(to_python(expr), {"__builtins__": {}}, dict(EXPR_FUNCS, **env))


def device_sms():
    """NUM_SMS: the GPU's multiprocessor count, 132 (H100 SXM, H200) without one, as evo."""
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(0).multi_processor_count
    except ImportError:
        pass
    return 132


def load_profile(path):
    with open(path) as f:
        p = json.load(f)
    p["_dir"] = os.path.dirname(os.path.abspath(path))
    p["_defines_num"] = {k: v for k, v in p.get("defines", {}).items() if isinstance(v, (int, float))}
    p["_defines_num"].setdefault("NUM_SMS", device_sms())  # as evo's expression_vars
    return p


def valid_configs(p):
    names = list(p["knobs"])
    out = []
    for values in itertools.product(*(p["knobs"][n] for n in names)):
        cfg = dict(zip(names, values))
        ok = True
        for prob in p["problems"]:
            env = dict(p["_defines_num"], **prob["sizes"], **cfg)
            if not all(ev(c, env) for c in p.get("constraints", [])):
                ok = False
                break
        if ok:
            out.append(cfg)
    return out


def cfg_key(cfg):
    return ",".join("%s=%d" % kv for kv in cfg.items())


def config_from_spec(p, spec, where):
    """"K=V,..." -> a whole configuration: the profile's baseline with those knobs changed."""
    given = {k: int(v) for k, v in (kv.split("=") for kv in spec.split(",") if kv)}
    unknown = sorted(set(given) - set(p["knobs"]))
    if unknown:
        raise ValueError("%s: no knob %s in the profile" % (where, ", ".join(unknown)))
    return dict(p["baseline"], **given)


# ---------------------------------------------------------------------------------------------
# B. NVRTC through ctypes
# ---------------------------------------------------------------------------------------------
def find_nvrtc():
    cands = []
    for d in ("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib"):
        cands += sorted(glob.glob(os.path.join(d, "libnvrtc.so*")))
    try:  # the pip wheel that CuPy / PyTorch use on the GPU machine
        import nvidia.cuda_nvrtc as m  # noqa: F401
        for d in m.__path__:
            cands += sorted(glob.glob(os.path.join(d, "**", "libnvrtc.so*"), recursive=True))
    except Exception:
        pass
    lib = ctypes.util.find_library("nvrtc")
    if lib:
        cands.append(lib)
    for c in cands:
        if "builtins" in c:
            continue
        try:
            return ctypes.CDLL(c), c
        except OSError:
            continue
    raise RuntimeError("libnvrtc.so not found (looked in /usr/local/cuda and the nvidia-cuda-nvrtc wheel)")


def cuda_include():
    for d in ("/usr/local/cuda/include", "/usr/local/cuda/targets/x86_64-linux/include"):
        if os.path.exists(os.path.join(d, "cuda_fp8.h")):
            return d
    try:
        import nvidia.cuda_runtime as m
        for d in m.__path__:
            for h in glob.glob(os.path.join(d, "**", "cuda_fp8.h"), recursive=True):
                return os.path.dirname(h)
    except Exception:
        pass
    raise RuntimeError("CUDA headers (cuda_fp8.h) not found")


_NVRTC = None


def nvrtc_compile(job):
    """job: (source_path, defines dict, arch, out_path) -> (ok, log, cubin_path)"""
    global _NVRTC
    src_path, defines, arch, out_path = job
    if _NVRTC is None:
        _NVRTC = find_nvrtc()[0]
    lib = _NVRTC
    src = open(src_path, "rb").read()
    prog = ctypes.c_void_p()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), src, os.path.basename(src_path).encode(), 0, None, None)
    if r != 0:
        return False, "nvrtcCreateProgram failed (%d)" % r, None
    opts = ["--std=c++17", "-arch=" + arch, "-I" + cuda_include(), "-I" + os.path.dirname(src_path),
            "--ptxas-options=-v"] + ["-D%s=%s" % kv for kv in defines.items()]
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    if rc != 0:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))
        return False, log, None
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
    cub = ctypes.create_string_buffer(n.value)
    lib.nvrtcGetCUBIN(prog, cub)
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    with open(out_path, "wb") as f:
        f.write(cub.raw)
    return True, log, out_path


# ptxas's "Potential Performance Loss: wgmma.mma_async instructions are serialized due to ..." (C7510 ..
# C7520): the kernel runs, correct, with every wgmma waited for before the next; a sweep should see it.
WGMMA_SERIAL = re.compile(r"\((C75\d\d)\) Potential Performance Loss: wgmma")


def ptxas_figures(log):
    regs = re.search(r"Used (\d+) registers", log)
    spill = re.findall(r"(\d+) bytes spill (?:stores|loads)", log)
    stack = re.search(r"(\d+) bytes stack frame", log)
    return (int(regs.group(1)) if regs else -1, sum(int(s) for s in spill), int(stack.group(1)) if stack else 0)


def compile_all(p, cfgs, arch, workdir, jobs):
    src = os.path.normpath(os.path.join(p["_dir"], p["template"]))
    work = []
    for i, cfg in enumerate(cfgs):
        defs = dict(p.get("defines", {}), **cfg)
        work.append((src, defs, arch, os.path.join(workdir, "c%04d.cubin" % i)))
    t0 = time.time()
    with mp.get_context("fork").Pool(jobs) as pool:
        res = pool.map(nvrtc_compile, work, chunksize=1)
    print("compiled %d configurations in %.1f s on %d processes" % (len(cfgs), time.time() - t0, jobs), flush=True)
    return res


# ---------------------------------------------------------------------------------------------
# C. correctness on the GPU
# ---------------------------------------------------------------------------------------------
def make_inputs(torch, prob, fp8, seed):
    B, H, S, D = (prob["sizes"][k] for k in "BHSD")
    g = torch.Generator(device="cuda").manual_seed(seed)
    raw = [torch.randn(B, H, S, D, device="cuda", generator=g) for _ in range(3)]
    if fp8:  # per-tensor scale: amax / 448 (e4m3's largest finite value), descale = that scale
        qs, desc = [], []
        for x in raw:
            s = x.abs().max().item() / 448.0
            qs.append((x / s).to(torch.float8_e4m3fn))
            desc.append(s)
        deq = [q.float() * s for q, s in zip(qs, desc)]
    else:
        qs = [x.half() for x in raw]
        desc = [1.0, 1.0, 1.0]
        deq = [q.float() for q in qs]
    return qs, desc, deq


def torch_ref(torch, deq, causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):  # plain fp32 math: no reduced-precision fused kernel
        return torch.nn.functional.scaled_dot_product_attention(*[x.double() for x in deq], is_causal=bool(causal)).float()


def error_figures(torch, out, ref, atol, rtol):
    o = out.float()
    if torch.isnan(o).any() or torch.isinf(o).any():
        return dict(nan=True, max_abs=float("nan"), mean_abs=float("nan"), bad_pct=100.0)
    d = (o - ref).abs()
    bad = (d > atol + rtol * ref.abs()).float().mean().item() * 100
    return dict(nan=False, max_abs=d.max().item(), mean_abs=d.mean().item(), bad_pct=bad)


def passes(fig, green):
    if fig["nan"]:
        return False
    if fig["bad_pct"] > green.get("max_bad_pct", 0):
        return False
    if "max_abs" in green and fig["max_abs"] > green["max_abs"]:
        return False
    if "mean_abs" in green and fig["mean_abs"] > green["mean_abs"]:
        return False
    return True


# TMA tensor maps (the profile's tensor_maps): encoded with the driver's cuTensorMapEncodeTiled, as
# evo's worker does (engine/device.cpp), and passed by value as a one-element numpy array of 128 bytes.
TMA_DTYPE = {1: 0, 2: 6, 4: 7}          # element bytes -> CU_TENSOR_MAP_DATA_TYPE_ UINT8, FLOAT16, FLOAT32
TMA_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
TMA_L2 = {0: 0, 64: 1, 128: 2, 256: 3}
_libcuda = []


def encode_tensor_map(tm, env, tensor):
    """tm: one entry of the profile's tensor_maps; tensor: the (torch) buffer it maps."""
    import numpy
    if not _libcuda:
        _libcuda.append(ctypes.CDLL("libcuda.so.1"))
    f = _libcuda[0].cuTensorMapEncodeTiled
    dims = [int(ev(e, env)) for e in tm["dims"]]
    box = [int(ev(e, env)) for e in tm["box"]]
    esz = tensor.element_size()
    if math.prod(dims) != tensor.numel():
        raise ValueError("tensor_maps %s: dims %s hold %d elements, buffer %s has %d" %
                         (tm["name"], dims, math.prod(dims), tm["buffer"], tensor.numel()))
    strides = [math.prod(dims[: i + 1]) * esz for i in range(len(dims) - 1)]
    rank = len(dims)
    raw = (ctypes.c_uint8 * 192)()
    at = (ctypes.addressof(raw) + 63) // 64 * 64  # CUtensorMap is 64-byte aligned
    r = f(ctypes.c_void_p(at), ctypes.c_int(TMA_DTYPE[esz]), ctypes.c_uint32(rank), ctypes.c_void_p(tensor.data_ptr()),
          (ctypes.c_uint64 * rank)(*dims), (ctypes.c_uint64 * max(1, rank - 1))(*strides),
          (ctypes.c_uint32 * rank)(*box), (ctypes.c_uint32 * rank)(*([1] * rank)), ctypes.c_int(0),
          ctypes.c_int(TMA_SWIZZLE[tm.get("swizzle", 0)]), ctypes.c_int(TMA_L2[tm.get("l2_promotion", 128)]),
          ctypes.c_int(0))
    if r != 0:
        raise RuntimeError("cuTensorMapEncodeTiled(%s: dims %s, box %s, swizzle %s) = CUresult %d" %
                           (tm["name"], dims, box, tm.get("swizzle", 0), r))
    return numpy.frombuffer(ctypes.string_at(at, 128), dtype=numpy.dtype((numpy.void, 128))).copy()


def tensor_map_args(p, cfg, prob, named):
    """The profile's tensor-map arguments, in its args order; named: buffer name -> torch tensor."""
    env = dict(p["_defines_num"], **prob["sizes"], **cfg)
    maps = {tm["name"]: tm for tm in p.get("tensor_maps", [])}
    return tuple(encode_tensor_map(maps[a], env, named[maps[a]["buffer"]]) for a in p["args"] if a in maps)


class Runner:
    """Launches one compiled configuration with the profile's launch geometry."""

    def __init__(self, cp, torch, p, cfg, cubin, kernel):
        self.cp, self.torch, self.p, self.cfg = cp, torch, p, cfg
        self.mod = cp.RawModule(path=cubin)
        self.fn = self.mod.get_function(kernel)
        self.smem_limit = 48 * 1024
        self.maps, self.maps_for = (), None

    def geometry(self, prob):
        env = dict(self.p["_defines_num"], **prob["sizes"], **self.cfg)
        L = self.p["launch"]
        grid = tuple(int(ev(e, env)) for e in L["grid"])
        block = tuple(int(ev(e, env)) for e in L["block"])
        smem = int(ev(L["shared_bytes"], env))
        return grid, block, smem

    def args(self, bufs, desc, prob, scale):
        np = self.cp
        s = prob["sizes"]
        Q, K, V, O, po, pml, cnt = bufs
        ptr = lambda t: np.uint64(t.data_ptr())
        key = (prob["name"], K.data_ptr(), V.data_ptr())
        if self.maps_for != key:  # encoded once per problem and buffers, never inside a graph capture
            self.maps = tensor_map_args(self.p, self.cfg, prob, {"Q": Q, "K": K, "V": V, "O": O})
            self.maps_for = key
        return (ptr(Q), ptr(K), ptr(V), ptr(O), ptr(po), ptr(pml), ptr(cnt),
                np.float32(desc[0]), np.float32(desc[1]), np.float32(desc[2]), np.float32(scale),
                np.int32(s["B"]), np.int32(s["H"]), np.int32(s["S"]), np.int32(s["causal"])) + self.maps

    def launch(self, prob, bufs, desc, scale, stream=None):
        grid, block, smem = self.geometry(prob)
        if smem > 48 * 1024 and smem > self.smem_limit:  # once, never inside a graph capture
            self.fn.max_dynamic_shared_size_bytes = smem
            self.smem_limit = smem
        self.fn(grid, block, self.args(bufs, desc, prob, scale), shared_mem=smem, stream=stream)


def scratch(torch, prob, split_max=4, tile_min=32, warps_max=12):
    """partial_o, partial_ml, split_counter, large enough for any configuration of the profiles: SPLIT_KV's
    partial rows, and STREAM_K's halves (a slot per block of at most NUM_SMS: 2 x (D/2 + 6) values a consumer
    thread of at most 12 warps, and a ticket a warp). The tickets start at zero; every launch leaves them so."""
    B, H, S, D = (prob["sizes"][k] for k in "BHSD")
    sms = device_sms()
    po = torch.empty(max(split_max * B * H * S * D, sms * 2 * (D // 2 + 6) * warps_max * 32), device="cuda",
                     dtype=torch.float32)
    pml = torch.empty(split_max, B, H, S, 2, device="cuda", dtype=torch.float32)
    cnt = torch.zeros(max(B * H * cdiv(S, tile_min), sms * warps_max), device="cuda", dtype=torch.int32)
    return po, pml, cnt


def time_graph(torch, fn, launches=20, reps=30):
    """CUDA graph of `launches` launches; median per-launch time (µs) over `reps` replays."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn(s)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=s):
        for _ in range(launches):
            fn(torch.cuda.current_stream())
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1000 / launches)
    ts.sort()
    return ts[len(ts) // 2]


def flops(prob):
    B, H, S, D = (prob["sizes"][k] for k in "BHSD")
    f = 4.0 * B * H * S * S * D
    return f / 2 if prob["sizes"]["causal"] else f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profiles", nargs="+")
    ap.add_argument("--compile-only", action="store_true", help="stop after compiling (no GPU needed)")
    ap.add_argument("--limit", type=int, default=0, help="check only the first N valid configurations")
    ap.add_argument("--only", default="", help="K=V[/V...],...: only the valid configurations with these "
                    "knob values (a slice of the space, e.g. after a change that touches one knob's paths)")
    ap.add_argument("--time", type=int, default=8, help="time the K fastest passing configurations")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--arch", default=None)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--json", default=os.path.join(os.environ.get("OUT", "/tmp"), "sdpa_check.json"))
    a = ap.parse_args()
    report = {}
    for path in a.profiles:
        report[path] = check_profile(a, path)
    with open(a.json, "w") as f:
        json.dump(report, f, indent=1)
    print("figures written to", a.json)


def check_profile(a, path):
    p = load_profile(path)
    cfgs = valid_configs(p)
    print("== %s: %d knobs, %d valid configurations" % (path, len(p["knobs"]), len(cfgs)), flush=True)
    if a.only:
        want = {}
        for item in a.only.split(","):
            k, _, vals = item.partition("=")
            if k not in p["knobs"] or not vals:
                sys.exit("--only %s: not K=V[/V...] with K a knob of %s" % (item, path))
            want[k] = {int(v) for v in vals.split("/")}
        cfgs = [c for c in cfgs if all(c[k] in vs for k, vs in want.items())]
        print("   --only %s: %d of them" % (a.only, len(cfgs)), flush=True)
    if a.limit:
        cfgs = cfgs[: a.limit]
    workdir = tempfile.mkdtemp(prefix="sdpa_check_")
    builds = compile_all(p, cfgs, a.arch or p.get("arch", "sm_90"), workdir, a.jobs)
    nfail = 0
    rows = []
    for cfg, (ok, log, cub) in zip(cfgs, builds):
        regs, spill, stack = ptxas_figures(log) if ok else (-1, -1, -1)
        if not ok:
            nfail += 1
            print("COMPILE FAIL", cfg_key(cfg), log.strip().splitlines()[-3:])
        elif spill or stack:
            print("SPILL", cfg_key(cfg), "regs", regs, "spill", spill, "stack", stack)
        serial = sorted(set(WGMMA_SERIAL.findall(log))) if ok else []
        if serial:
            print("WGMMA SERIALISED", cfg_key(cfg), ",".join(serial))
        rows.append(dict(cfg=cfg, ok=ok, regs=regs, spill=spill, stack=stack, cubin=cub, serial=serial))
    regs_all = [r["regs"] for r in rows if r["ok"]]
    nserial = sum(1 for r in rows if r["serial"])
    print("compile: %d ok, %d failed, %d with spills or stack, %d with serialised wgmma; registers %s..%s" %
          (len(rows) - nfail, nfail, sum(1 for r in rows if r["ok"] and (r["spill"] or r["stack"])), nserial,
           min(regs_all, default="-"), max(regs_all, default="-")), flush=True)
    result = dict(valid=len(cfgs), compile_fail=nfail,
                  spills=sum(1 for r in rows if r["ok"] and (r["spill"] or r["stack"])), wgmma_serialised=nserial)
    if a.compile_only:
        return result

    import cupy as cp
    import torch
    fp8 = bool(p["defines"].get("IN_FP8", 0))
    green = p["gates"]["green"]
    atol, rtol = green.get("atol", 1e-2), green.get("rtol", 1e-2)
    dev = torch.cuda.get_device_properties(0)
    print("device:", dev.name, "SMs", dev.multi_processor_count, flush=True)

    # inputs and PyTorch references, per problem and seed (shared by every configuration)
    data = {}
    t0 = time.time()
    for prob in p["problems"]:
        for seed in range(a.seeds):
            qs, desc, deq = make_inputs(torch, prob, fp8, 1000 * seed + 7)
            ref = torch_ref(torch, deq, prob["sizes"]["causal"])
            O = torch.empty(qs[0].shape, device="cuda", dtype=torch.float16)
            data[(prob["name"], seed)] = (qs, desc, ref, O, scratch(torch, prob))
    print("PyTorch references: %.1f s" % (time.time() - t0), flush=True)

    # the trusted reference kernel against PyTorch
    ref_src = os.path.normpath(os.path.join(p["_dir"], p["reference"]["template"]))
    ok, log, rcub = nvrtc_compile((ref_src, dict(p["reference"].get("defines", {})), p.get("arch", "sm_90"),
                                   os.path.join(workdir, "ref.cubin")))
    if not ok:
        print("REFERENCE COMPILE FAIL", log)
    else:
        rfn = cp.RawModule(path=rcub).get_function(p["reference"]["kernel"])
        worst = 0.0
        for prob in p["problems"]:
            s = prob["sizes"]
            qs, desc, ref, O, _ = data[(prob["name"], 0)]
            O.fill_(float("nan"))
            rfn((s["S"], s["B"] * s["H"], 1), (128, 1, 1),
                tuple(cp.uint64(t.data_ptr()) for t in qs + [O]) +
                tuple(cp.float32(x) for x in desc + [1 / math.sqrt(s["D"])]) +
                tuple(cp.int32(s[k]) for k in ("B", "H", "S", "causal")), shared_mem=s["S"] * 4)
            torch.cuda.synchronize()
            fig = error_figures(torch, O, ref, atol, rtol)
            worst = max(worst, fig["max_abs"] if not fig["nan"] else float("inf"))
            print("reference kernel %-15s max_abs %.2e mean_abs %.2e bad %.3f%%" %
                  (prob["name"], fig["max_abs"], fig["mean_abs"], fig["bad_pct"]), flush=True)
        result["reference_max_abs"] = worst

    # every configuration on every problem and seed
    npass = 0
    t0 = time.time()
    fails = {}
    per_problem = {q["name"]: dict(max_abs=0.0, mean_abs=0.0, bad_pct=0.0) for q in p["problems"]}  # worst, any config
    for i, r in enumerate(rows):
        if not r["ok"]:
            continue
        try:
            run = Runner(cp, torch, p, r["cfg"], r["cubin"], p["kernel"])
        except Exception as e:  # a module that does not load is a failure, not the end of the sweep
            r["green"] = False
            r["why"] = "load: %s" % e
            continue
        good = True
        worst = dict(max_abs=0.0, mean_abs=0.0, bad_pct=0.0)
        for prob in p["problems"]:
            for seed in range(a.seeds):
                qs, desc, ref, O, scr = data[(prob["name"], seed)]
                O.fill_(float("nan"))
                try:
                    run.launch(prob, qs + [O] + list(scr), desc, 1 / math.sqrt(prob["sizes"]["D"]))
                    torch.cuda.synchronize()
                except Exception as e:
                    print("LAUNCH ERROR (context is gone; stopping)", cfg_key(r["cfg"]), prob["name"], e, flush=True)
                    raise
                fig = error_figures(torch, O, ref, atol, rtol)
                for k in worst:
                    worst[k] = max(worst[k], fig[k]) if not fig["nan"] else float("inf")
                    per_problem[prob["name"]][k] = max(per_problem[prob["name"]][k], worst[k] if fig["nan"] else fig[k])
                if not passes(fig, green):
                    good = False
                    r.setdefault("why", "%s seed %d: max_abs %.3g mean_abs %.3g bad %.2f%%%s" % (
                        prob["name"], seed, fig["max_abs"], fig["mean_abs"], fig["bad_pct"], " NaN" if fig["nan"] else ""))
        r["green"] = good
        r["worst"] = worst
        r["runner"] = run
        npass += good
        if not good:
            fails[cfg_key(r["cfg"])] = r["why"]
            if len(fails) <= 40:
                print("FAIL", cfg_key(r["cfg"]), r["why"], flush=True)
    print("GREEN: %d pass, %d fail of %d compiled (%.1f s)" % (npass, len(fails), len(rows) - nfail, time.time() - t0),
          flush=True)
    wmax = max((r["worst"]["max_abs"] for r in rows if r.get("green")), default=float("nan"))
    wmean = max((r["worst"]["mean_abs"] for r in rows if r.get("green")), default=float("nan"))
    wbad = max((r["worst"]["bad_pct"] for r in rows if r.get("green")), default=float("nan"))
    print("worst figures over passing configurations: max_abs %.3g, mean_abs %.3g, bad %.3f%%" % (wmax, wmean, wbad))
    for name, f in per_problem.items():  # what a profile's GREEN thresholds are set from (every configuration)
        print("  worst on %-15s max_abs %.3g mean_abs %.3g bad %.3f%%" % (name, f["max_abs"], f["mean_abs"], f["bad_pct"]))
    result["per_problem_worst"] = per_problem
    result.update(green_pass=npass, green_fail=len(fails), fails=fails, worst_max_abs=wmax, worst_mean_abs=wmean)

    # D. timing: every passing configuration once on the objective, then the best K on every problem
    obj = next(q for q in p["problems"] if q["name"] == p.get("objective", p["problems"][0]["name"]))
    green_rows = [r for r in rows if r.get("green")]
    t0 = time.time()
    for r in green_rows:
        qs, desc, ref, O, scr = data[(obj["name"], 0)]
        bufs = qs + [O] + list(scr)
        r["t_obj"] = time_graph(torch, lambda s, r=r: r["runner"].launch(obj, bufs, desc, 1 / math.sqrt(obj["sizes"]["D"]),
                                                                          stream=cp.cuda.ExternalStream(s.cuda_stream)),
                                reps=10)
    print("timed %d passing configurations on %s (%.1f s)" % (len(green_rows), obj["name"], time.time() - t0), flush=True)
    green_rows.sort(key=lambda r: r["t_obj"])
    best = green_rows[: a.time]
    # the largest problem wants other tiles: scan it too (fewer replays), over the configurations
    # within 2x of the objective's best, and add its 3 fastest to the table
    big = max(p["problems"], key=flops)
    if big is not obj and green_rows:
        qs, desc, ref, O, scr = data[(big["name"], 0)]
        bufs = qs + [O] + list(scr)
        t0 = time.time()
        scan = [r for r in green_rows if r["t_obj"] <= 2 * green_rows[0]["t_obj"]]
        for r in scan:
            r["t_big"] = time_graph(torch, lambda s, r=r: r["runner"].launch(big, bufs, desc, 1 / math.sqrt(big["sizes"]["D"]),
                                                                              stream=cp.cuda.ExternalStream(s.cuda_stream)),
                                    launches=5, reps=3)
        scan.sort(key=lambda r: r["t_big"])
        print("scanned %d configurations on %s (%.1f s)" % (len(scan), big["name"], time.time() - t0), flush=True)
        best += [r for r in scan[:3] if r not in best]
    base = next((r for r in rows if r["cfg"] == p["baseline"]), None)
    best += [base] if base is not None and base.get("green") and base not in best else []
    pnames = [q["name"] for q in p["problems"] if q["name"] != "small"]
    print("\n%-110s " % "configuration (µs per launch, CUDA graph of 20, median)" + " ".join("%14s" % n for n in pnames))
    table = []
    for r in best:
        ts = []
        for prob in p["problems"]:
            if prob["name"] == "small":
                continue
            qs, desc, ref, O, scr = data[(prob["name"], 0)]
            bufs = qs + [O] + list(scr)
            ts.append(time_graph(torch, lambda s, prob=prob, bufs=bufs, desc=desc: r["runner"].launch(
                prob, bufs, desc, 1 / math.sqrt(prob["sizes"]["D"]), stream=cp.cuda.ExternalStream(s.cuda_stream))))
        tag = " (baseline)" if r is base else ""
        print("%-110s " % (cfg_key(r["cfg"]) + tag) + " ".join("%14.2f" % t for t in ts))
        table.append(dict(cfg=r["cfg"], baseline=r is base, regs=r["regs"], times_us=dict(zip(pnames, ts))))
    for prob in p["problems"]:
        if table and prob["name"] in table[0]["times_us"]:
            t, c = min((row["times_us"][prob["name"]], cfg_key(row["cfg"])) for row in table)
            print("best at %-15s %9.2f µs = %6.1f TFLOP/s  %s" % (prob["name"], t, flops(prob) / t / 1e6, c))
    result["timing"] = table
    return result


if __name__ == "__main__":
    main()
