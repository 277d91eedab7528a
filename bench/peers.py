#!/usr/bin/env python3
"""Side-by-side attention forward timings on one GPU, one process, one method.

    python3 bench/peers.py --fp16 kernels/sdpa_fp16-XXXX.cu --fp8 kernels/sdpa_fp8-XXXX.cu
    python3 bench/peers.py --fp16 MMA_PATH=1,TILE_M=128,... --fp8 MMA_PATH=1,... [--template templates/sdpa.cu]
    python3 bench/peers.py --fp16-profile profiles/sdpa_fp16_wgmma.json \
        --fp16 mission:MMA_PATH=2,TILE_M=64,... --fp16 long:MMA_PATH=2,...     # one configuration per shape
    ncu --profile-from-start off ... python3 bench/peers.py ... --profile-once  # one launch per peer, for ncu

Peers, on mission (B=2,H=8,S=256,D=64), mission512 (1,8,512,64) and long (2,16,4096,64), non-causal,
and with --shapes at head size 128 (issue 18): long128 (2,16,4096,128), prefill128 (1,32,2048,128) and
long128_causal (2,16,4096,128, causal; FLOPs counted as half the non-causal ones):
  torch-flash   PyTorch SDPA, FlashAttention-2 back-end, fp16
  torch-cudnn   PyTorch SDPA, cuDNN back-end, fp16 (the yardstick: ratios are to its time)
  triton-fa2    a FlashAttention-2 forward in Triton, tuned by triton.autotune (fp16, and fp8 e4m3 Q·Kᵀ;
                causal skips the key blocks past each query block)
  evo           the evo configuration given: an exported .cu (knobs fixed at the top, a .json with
                "knobs" and "profile" beside it) or K=V knobs for the template, compiled with NVRTC
                (CuPy RawModule); its launch geometry comes from the profile's expressions.
Every peer is timed the same way (tests/gpu/sdpa_check.py time_graph): a CUDA graph of 20 launches,
replayed, median per launch; the peers of a shape are timed in turn, --rounds times over (5), and
each reports the median over rounds (a long launch drifts with the clock by several percent from one
timing to the next; interleaving makes the drift hit every peer alike). evo fp8 against evo fp16 is
also compared round by round (the two are timed a few launches apart in every round): the target
"FP8 beats FP16" is met when fp8's median is lower and fp8 was faster in at least 3 of 4 rounds.
FP8 inputs are quantised per tensor (amax / 448) and carry descales.
"""
import argparse
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import sdpa_check as chk  # noqa: E402  (profile expressions, NVRTC, the timing method)

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

# name, B, H, S, D, causal; --shapes picks (default: the D=64 three)
ALL_SHAPES = [("mission", 2, 8, 256, 64, 0), ("mission512", 1, 8, 512, 64, 0), ("long", 2, 16, 4096, 64, 0),
              ("long128", 2, 16, 4096, 128, 0), ("prefill128", 1, 32, 2048, 128, 0),
              ("long128_causal", 2, 16, 4096, 128, 1)]
SHAPES = ALL_SHAPES[:3]


def shape_flops(B, H, S, D, causal):
    """Forward FLOPs as FlashAttention counts them: 4·B·H·S²·D, half of it under a causal mask."""
    return 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)


# ---------------------------------------------------------------------------------------------
# Triton FlashAttention-2 forward (non-causal), autotuned per (S, D, dtype)
# ---------------------------------------------------------------------------------------------
@triton.autotune(
    configs=[triton.Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=w, num_stages=s)
             for bm in (64, 128) for bn in (32, 64, 128) for w in (4, 8) for s in (2, 3)
             if not (bm == 64 and w == 8)],
    key=["S", "D", "IS_FP8", "CAUSAL"])
@triton.jit
def _fa2_fwd(Q, K, V, O, q_descale, k_descale, v_descale, sm_scale, S,
             D: tl.constexpr, IS_FP8: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
             BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * S * D
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, D)
    q = tl.load(Q + head + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < S, other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    qk_scale = sm_scale * q_descale * k_descale * 1.4426950408889634  # log2 domain
    end = tl.minimum(S, (pid_m + 1) * BLOCK_M) if CAUSAL else S   # causal: no key past the block's last query
    for start in range(0, end, BLOCK_N):
        kn = start + offs_n
        kt = tl.load(K + head + kn[None, :] * D + offs_d[:, None], mask=kn[None, :] < S, other=0.0)  # Kᵀ tile [D, N]
        qk = tl.dot(q, kt) * qk_scale
        keep = kn[None, :] < S
        if CAUSAL:
            keep = keep & (kn[None, :] <= offs_m[:, None])
        qk = tl.where(keep, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))           # online softmax: running max
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)                 # rescale earlier blocks
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(V + head + kn[:, None] * D + offs_d[None, :], mask=kn[:, None] < S, other=0.0)
        if IS_FP8:
            v = v.to(tl.float16)
        acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        m_i = m_new
    out = acc / l_i[:, None] * v_descale
    tl.store(O + head + offs_m[:, None] * D + offs_d[None, :], out.to(tl.float16), mask=offs_m[:, None] < S)


def triton_fa2(q, k, v, o, desc, scale, fp8, causal=0):
    B, H, S, D = q.shape
    grid = lambda meta: (triton.cdiv(S, meta["BLOCK_M"]), B * H)
    _fa2_fwd[grid](q, k, v, o, desc[0], desc[1], desc[2], scale, S, D=D, IS_FP8=fp8, CAUSAL=int(causal))


# ---------------------------------------------------------------------------------------------
# evo: an exported kernel or the template with knobs
# ---------------------------------------------------------------------------------------------
class EvoKernel:
    def __init__(self, spec, template, profile_path, workdir):
        import cupy as cp
        self.cp = cp
        if spec.endswith(".cu"):  # exported: knobs fixed in the source, provenance beside it
            meta = json.load(open(spec[:-3] + ".json"))
            prof = meta.get("profile", profile_path)
            if isinstance(prof, dict):
                prof = prof.get("path", prof.get("name"))
            if not os.path.exists(prof):
                prof = os.path.join(ROOT, "profiles", os.path.basename(prof).replace(".json", "") + ".json")
            self.p = chk.load_profile(prof)
            # knobs the profile gained after the export was made keep their baseline value (the one the
            # exported code has: a knob's default is the value that leaves the older code as it was)
            self.cfg = dict(self.p["baseline"], **{k: int(v) for k, v in meta["knobs"].items()})
            defines = {}
            src = spec
            entry = meta.get("entry", self.p["kernel"])  # a --dispatch export renames it per problem
        else:
            self.p = chk.load_profile(profile_path)
            self.cfg = chk.config_from_spec(self.p, spec, "%s (%s)" % (spec, profile_path))
            defines = dict(self.p.get("defines", {}), **self.cfg)
            src = template
            entry = self.p["kernel"]
        ok, log, cub = chk.nvrtc_compile((os.path.abspath(src), defines, self.p.get("arch", "sm_90"),
                                          os.path.join(workdir, "evo%d.cubin" % len(os.listdir(workdir)))))
        if not ok:
            raise RuntimeError("evo kernel does not compile:\n" + log)
        self.fn = cp.RawModule(path=cub).get_function(entry)
        self.smem_set = False
        self.maps, self.maps_for = (), None

    def __call__(self, prob, bufs, desc, scale, stream):
        env = dict(self.p["_defines_num"], **prob["sizes"], **self.cfg)
        L = self.p["launch"]
        grid = tuple(int(chk.ev(e, env)) for e in L["grid"])
        block = tuple(int(chk.ev(e, env)) for e in L["block"])
        smem = int(chk.ev(L["shared_bytes"], env))
        if smem > 48 * 1024 and not self.smem_set:
            self.fn.max_dynamic_shared_size_bytes = smem
            self.smem_set = True
        cp = self.cp
        s = prob["sizes"]
        key = (prob["name"],) + tuple(t.data_ptr() for t in bufs[:4])
        if self.maps_for != key:  # TMA tensor maps: encoded once per shape and buffers, outside graph capture
            self.maps = chk.tensor_map_args(self.p, self.cfg, prob, dict(zip("QKVO", bufs[:4])))
            self.maps_for = key
        args = tuple(cp.uint64(t.data_ptr()) for t in bufs) + tuple(cp.float32(x) for x in list(desc) + [scale]) + \
            tuple(cp.int32(s[k]) for k in ("B", "H", "S", "causal")) + self.maps
        self.fn(grid, block, args, shared_mem=smem, stream=stream)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--template", default=os.path.join(ROOT, "templates", "sdpa.cu"))
    ap.add_argument("--fp16", action="append", default=[],
                    help="exported .cu, or K=V,... knobs for --template (profile --fp16-profile); "
                    "prefix SHAPE: to give it for one shape only (repeatable)")
    ap.add_argument("--fp8", action="append", default=[], help="as --fp16, for fp8 (profile --fp8-profile)")
    ap.add_argument("--fp16-profile", default=os.path.join(ROOT, "profiles", "sdpa_fp16.json"))
    ap.add_argument("--fp8-profile", default=os.path.join(ROOT, "profiles", "sdpa_fp8.json"))
    ap.add_argument("--profile-once", action="store_true",
                    help="no timing: launch each peer once between cudaProfilerStart/Stop (run under "
                    "ncu --profile-from-start off), after its warm-up and Triton's autotuning")
    ap.add_argument("--knobs", help="K=V,... used for both dtypes where --fp16 / --fp8 are not given")
    ap.add_argument("--best", action="append", default=[],
                    help="sdpa_check.py's JSON (repeatable): the fastest passing configuration per shape over "
                    "the profiles it covers (a problem of the shape's sizes), where --fp16 / --fp8 are not given")
    ap.add_argument("--rounds", type=int, default=5,
                    help="time every peer of a shape this many times, interleaved; report the median")
    ap.add_argument("--shapes", default=",".join(n for n, *_ in SHAPES),
                    help="comma-separated, of: " + ", ".join("%s %s" % (n, tuple(x)) for n, *x in ALL_SHAPES))
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "peers.json"))
    a = ap.parse_args()
    known = {x[0]: x for x in ALL_SHAPES}
    for n in a.shapes.split(","):
        if n not in known:
            sys.exit("--shapes: unknown shape %s (known: %s)" % (n, ", ".join(known)))
    SHAPES[:] = [known[n] for n in a.shapes.split(",")]
    import tempfile
    work = tempfile.mkdtemp(prefix="peers_")
    torch.backends.cuda.matmul.allow_tf32 = False
    from torch.nn.attention import SDPBackend, sdpa_kernel
    print("device:", torch.cuda.get_device_name(0), "torch", torch.__version__, "triton", triton.__version__, flush=True)

    # evo[(dtype, shape)]: the given configuration for every shape, or the fastest passing one per shape
    # over the sdpa profiles that sdpa_check's JSON files cover: a profile's problem counts for a shape
    # when its sizes are the shape's (B, H, S, D, causal); fp8 or fp16 by the profile's IN_FP8
    best = {}
    for best_file in a.best:
        for path, r in json.load(open(best_file)).items():
            prof = path if os.path.exists(path) else os.path.join(ROOT, "profiles", os.path.basename(path))
            if not r.get("timing") or not os.path.exists(prof):
                continue
            pj = json.load(open(prof))
            dt = "fp8" if int(pj.get("defines", {}).get("IN_FP8", 0)) else "fp16"
            for name, B, H, S, D, causal in SHAPES:
                want = {"B": B, "H": H, "S": S, "D": D, "causal": causal}
                probs = [q["name"] for q in pj["problems"] if {k: q["sizes"].get(k) for k in want} == want]
                if not probs:
                    continue
                row = min(r["timing"], key=lambda t: t["times_us"].get(probs[0], float("inf")))
                t = row["times_us"].get(probs[0], float("inf"))
                if t < best.get((dt, name), (None, None, float("inf")))[2]:
                    best[(dt, name)] = (",".join("%s=%d" % kv for kv in row["cfg"].items()), prof, t)

    def given_for(specs, shape):  # "SHAPE:spec" for one shape wins over a plain spec for all
        shapes = {n for n, *_ in SHAPES}
        plain = [x for x in specs if x.split(":", 1)[0] not in shapes]
        own = [x.split(":", 1)[1] for x in specs if x.startswith(shape + ":")]
        return (own or plain or [None])[-1]

    evo, built = {}, {}
    for dt, specs, given_prof in (("fp16", a.fp16, a.fp16_profile), ("fp8", a.fp8, a.fp8_profile)):
        for name, *_ in SHAPES:
            spec, prof = given_for(specs, name) or a.knobs, given_prof
            if not spec and (dt, name) in best:
                spec, prof = best[(dt, name)][:2]
            if not spec:
                continue
            if (spec, prof) not in built:
                built[(spec, prof)] = EvoKernel(spec, a.template, prof, work)
            evo[(dt, name)] = built[(spec, prof)]
            print("evo %s %s: %s (%s)" % (dt, name, chk.cfg_key(evo[(dt, name)].cfg), evo[(dt, name)].p.get("name", prof)),
                  flush=True)

    results, spreads, per_round = {}, {}, {}
    for name, B, H, S, D, causal in SHAPES:
        prob = {"name": name, "sizes": {"B": B, "H": H, "S": S, "D": D, "causal": causal}}
        scale = 1 / math.sqrt(D)
        row, spread, timed = {}, {}, []
        for fp8 in (False, True):
            qs, desc, deq = chk.make_inputs(torch, prob, fp8, 11)
            ref = chk.torch_ref(torch, deq, causal) if S <= 512 else None
            o = torch.empty(B, H, S, D, device="cuda", dtype=torch.float16)
            dt = "fp8" if fp8 else "fp16"
            runs = {}
            if not fp8:
                def torch_backend(be, qs=qs):
                    def f(stream):
                        with sdpa_kernel(be):
                            torch.nn.functional.scaled_dot_product_attention(*qs, is_causal=bool(causal))
                    return f
                runs["torch-flash"] = torch_backend(SDPBackend.FLASH_ATTENTION)
                runs["torch-cudnn"] = torch_backend(SDPBackend.CUDNN_ATTENTION)
            # (defaults bind this dtype's tensors: the functions are timed after both dtypes are set up)
            runs["triton-fa2"] = lambda stream, qs=qs, o=o, desc=desc, fp8=fp8: triton_fa2(*qs, o, desc, scale, fp8, causal)
            if (dt, name) in evo:
                scr = chk.scratch(torch, prob)
                runs["evo"] = lambda stream, k=evo[(dt, name)], qs=qs, o=o, desc=desc, scr=scr: k(
                    prob, qs + [o] + list(scr), desc, scale, k.cp.cuda.ExternalStream(stream.cuda_stream))
            for peer, fn in runs.items():
                try:
                    fn(torch.cuda.current_stream())  # warm-up (and Triton's autotuning) outside the graph
                    torch.cuda.synchronize()
                    if ref is not None and peer in ("triton-fa2", "evo"):
                        err = (o.float() - ref).abs().max().item()
                        if not err < 2e-2:
                            print("WARNING %s %s %s: max_abs %.3g against fp32 SDPA" % (peer, dt, name, err))
                    if a.profile_once:  # ncu sees exactly this launch
                        torch.cuda.cudart().cudaProfilerStart()
                        fn(torch.cuda.current_stream())
                        torch.cuda.synchronize()
                        torch.cuda.cudart().cudaProfilerStop()
                        continue
                    timed.append(("%s %s" % (peer, dt), fn))
                except Exception as e:  # a peer missing on this machine is reported, not fatal
                    print("%s %s %s: unavailable (%s)" % (peer, dt, name, str(e).splitlines()[0][:120]), flush=True)
            if any(k == "triton-fa2 %s" % dt for k, _ in timed):
                best = _fa2_fwd.best_config
                print("triton-fa2 %s %s best config: %s" % (dt, name, best), flush=True)
        # every peer of this shape in turn, `rounds` times over (drifting clocks hit all alike); median
        ts = {k: [] for k, _ in timed}
        for _ in range(a.rounds):
            for k, fn in timed:
                ts[k].append(chk.time_graph(torch, fn))
        per_round[name] = {k: list(v) for k, v in ts.items()}  # in round order, before sorting
        for k, v in ts.items():
            v.sort()
            row[k] = v[len(v) // 2]
            spread[k] = v[-1] - v[0]
        results[name] = row
        spreads[name] = spread
        print(name, {k: round(v, 2) for k, v in row.items()}, flush=True)

    # table: µs, ratio of time to cuDNN's (lower is better), TFLOP/s
    peers = sorted({k for r in results.values() for k in r}, key=lambda k: (k.split()[1], k))
    width = {n: max(12, len(n) + 1) for n, *_ in SHAPES}
    print("\n%-18s" % "peer" + "".join("%*s %7s %8s" % (width[n], n, "/cudnn", "TFLOP/s") for n, *_ in SHAPES))
    for k in peers:
        line = "%-18s" % k
        for name, B, H, S, D, causal in SHAPES:
            r = results[name]
            if k not in r:
                line += "%*s %7s %8s" % (width[name], "-", "-", "-")
                continue
            c = r.get("torch-cudnn fp16")
            tf = shape_flops(B, H, S, D, causal) / r[k] / 1e6
            line += "%*.2fus %7s %8.1f" % (width[name] - 2, r[k], ("%.2f" % (r[k] / c)) if c else "-", tf)
        print(line)
    print("(median of %d interleaved rounds; largest spread max - min: %s)" % (
        a.rounds, ", ".join("%s %.2f us" % (n, max(spreads[n].values(), default=0)) for n, *_ in SHAPES if n in spreads)))
    # the issues' targets (issue 18), for the shapes timed
    c = lambda n: results.get(n, {}).get("torch-cudnn fp16")
    e16 = lambda n: results.get(n, {}).get("evo fp16")
    e8 = lambda n: results.get(n, {}).get("evo fp8")
    t8 = lambda n: results.get(n, {}).get("triton-fa2 fp8")
    flop = {n: shape_flops(*x) for n, *x in SHAPES}
    print()
    for n in ("mission", "mission512"):
        if c(n) and e16(n):
            print("target FP16 %-10s time <= 0.60x cuDNN: %.2fx  %s" % (n, e16(n) / c(n), "MET" if e16(n) <= 0.6 * c(n) else "MISSED"))
    for n, want in (("long", 1.05), ("long128", 1.0)):
        if c(n) and e16(n):
            print("target FP16 %-10s TFLOP/s >= %.2fx cuDNN: %.2fx  %s" % (n, want, c(n) / e16(n),
                                                                          "MET" if c(n) / e16(n) >= want else "MISSED"))
    if c("long128_causal") and e16("long128_causal"):
        r = e16("long128_causal") / c("long128_causal")
        print("target FP16 long128_causal no slower than cuDNN: %.2fx its time  %s" % (r, "MET" if r <= 1.0 else "MISSED"))
    if e8("long128"):
        tf = flop["long128"] / e8("long128") / 1e6
        print("target FP8 long128 >= 800 TFLOP/s: %.0f  %s" % (tf, "MET" if tf >= 800 else "MISSED"))
    for n, *_ in SHAPES:
        if e8(n) and t8(n):
            print("target FP8 faster than triton-fa2 fp8 on %-14s: %.2f vs %.2f us  %s" % (
                n, e8(n), t8(n), "MET" if e8(n) < t8(n) else "MISSED"))
    for n, *_ in SHAPES:
        if e8(n) and e16(n):
            pairs = list(zip(per_round[n]["evo fp8"], per_round[n]["evo fp16"]))
            wins = sum(1 for x8, x16 in pairs if x8 < x16)
            ratios = sorted(x8 / x16 for x8, x16 in pairs)
            clear = e8(n) < e16(n) and 4 * wins >= 3 * len(pairs)
            verdict = "MET" if clear else "NOT CLEAR" if e8(n) < e16(n) else "MISSED"
            print("target FP8 beats FP16 on %-10s: %.2f vs %.2f us, fp8 faster in %d of %d rounds, "
                  "paired ratio median %.3f  %s" % (n, e8(n), e16(n), wins, len(pairs), ratios[len(ratios) // 2], verdict))
    with open(a.out, "w") as f:
        json.dump({"median_us": results, "spread_us": spreads, "rounds": a.rounds, "per_round_us": per_round}, f, indent=1)


if __name__ == "__main__":
    main()
