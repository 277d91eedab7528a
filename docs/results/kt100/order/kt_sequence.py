#!/usr/bin/env python3
"""The configurations one of Kernel Tuner's strategies evaluates, in order, on an evo landscape (simulation
mode, as bench/kt_compare.py runs it): one line per seed, each configuration with its median (µs; x: failed),
a star where the best so far improves.

    KERNEL_TUNER_DIR=... KT_STUBS=... python3 docs/results/kt100/order/kt_sequence.py LANDSCAPE STRATEGY BUDGET SEEDS
"""
import importlib.util, logging, os, sys, tempfile
from pathlib import Path

root = Path(__file__).resolve().parents[4]
spec = importlib.util.spec_from_file_location("kt_compare", root / "bench" / "kt_compare.py")
ktc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ktc)
stubs = ktc.kt_stubs(os.environ.get("KT_STUBS"))
sys.path[:0] = ([stubs] if stubs else []) + [str(ktc.kt_source(None))]
import kernel_tuner as kt  # noqa: E402

logging.disable(logging.CRITICAL)
path, strategy, budget, seeds = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
d, names, knobs, points, best = ktc.load_landscape(path)
status_of = {tuple(c["knobs"][n] for n in names): c["status"] for c in d["configs"]}
with tempfile.TemporaryDirectory() as tmp:
    cache = Path(tmp) / "cache.json"
    ktc.write_cache(cache, "landscape", names, knobs, points, status_of)
    for seed in range(seeds):
        top, cells = float("inf"), []
        for c in ktc.run_kt(kt, strategy, cache, names, knobs, points, budget, seed)[:budget]:
            t = points.get(c)
            star = "*" if t is not None and t < top else ""
            top = min(top, t) if t is not None else top
            cells.append(f"{c}={t:.0f}{star}" if t is not None else f"{c}=x")
        print(seed, " ".join(cells), flush=True)
