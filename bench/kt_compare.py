#!/usr/bin/env python3
"""Kernel Tuner's strategies beside evo's, on the same recorded landscapes.

Each evo landscape (tests/data/landscape_*.json, the complete valid space of a profile) becomes a
Kernel Tuner cache file, and Kernel Tuner 1.4.0 (its public source, with Debian's Python packages)
runs its strategies on it in simulation mode. evo runs on the same
landscape through `evo run --replay`. For each budget (10/20/30 % of the configurations that pass
the constraints) and seed, the best median among the first N *distinct* configurations evaluated
(failures count) is taken; the table gives the share of seeds within 2 % of the landscape's best
and the mean best.

  scripts/install-deps.sh --bench
  KERNEL_TUNER_DIR=~/kernel_tuner python3 bench/kt_compare.py --evo build/evo --out docs/results/kt_compare.md [LANDSCAPE ...]

Kernel Tuner comes from --kt-src DIR (or $KT_SRC), a source tree used as it is, or else from
$KERNEL_TUNER_DIR, a clone of https://github.com/KernelTuner/kernel_tuner (git dir or work tree) or
that URL, whose commit 96a6abc is extracted. python-constraint2, which Debian does not package, may
be a stand-in folder: --kt-stubs DIR (or $KT_STUBS, or $EVO_SHARED_DIR/kernel_tuner_sim/stubs).
Run with Debian's python3 (the one with NumPy).
"""
import argparse, datetime, json, math, os, random, sqlite3, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KT_COMMIT = "96a6abc1019179397753c4afede9149a80aec369"
STRATEGIES = ["random_sample", "genetic_algorithm", "dual_annealing", "simulated_annealing", "pso",
              "firefly_algorithm", "diff_evo", "greedy_ils", "mls", "basinhopping", "bayes_opt"]


def kt_source(arg):
    """A Kernel Tuner source tree: --kt-src as it is, else commit KT_COMMIT of $KERNEL_TUNER_DIR."""
    if arg:
        return Path(arg)
    repo = os.environ.get("KERNEL_TUNER_DIR")
    if not repo:
        sys.exit("kt_compare: no Kernel Tuner: give --kt-src DIR (a source tree), or KERNEL_TUNER_DIR=DIR (a clone of "
                 "https://github.com/KernelTuner/kernel_tuner, git dir or work tree, or that URL)")
    dest = Path(tempfile.gettempdir()) / f"kt_src_{KT_COMMIT[:7]}"
    if (dest / "kernel_tuner").is_dir():
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    gitdir = repo
    if Path(repo, ".git").exists():
        gitdir = str(Path(repo, ".git"))
    elif not Path(repo).is_dir():
        subprocess.run(["git", "clone", "-q", "--bare", repo, str(dest / "kt.git")], check=True)
        gitdir = str(dest / "kt.git")
    archive = subprocess.run(["git", "--git-dir", gitdir, "archive", KT_COMMIT], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def kt_stubs(arg):
    """The folder standing in for python-constraint2, or None where the real package is installed."""
    if arg:
        return arg
    if os.environ.get("EVO_SHARED_DIR"):
        return str(Path(os.environ["EVO_SHARED_DIR"]) / "kernel_tuner_sim" / "stubs")
    return None


def load_landscape(path):
    d = json.load(open(path))
    knobs = d["space"]["knobs"]  # name -> values, in the profile's order
    names = list(knobs)
    points = {}
    for c in d["configs"]:
        key = tuple(c["knobs"][n] for n in names)
        points[key] = c["p50_us"] if c["status"] == "measured" else None
    best = min(t for t in points.values() if t is not None)
    return d, names, knobs, points, best


def write_cache(path, name, names, knobs, points, status_of):
    cache = {}
    for key, t in points.items():
        k = ",".join(str(v) for v in key)
        entry = {n: v for n, v in zip(names, key)}
        if t is None:
            entry["time"] = "CompilationFailedConfig" if status_of[key] == "compile_error" else "RuntimeFailedConfig"
            entry["times"] = []
        else:
            entry["time"] = t / 1000.0  # ms
            entry["times"] = [t / 1000.0]
        entry.update(compile_time=0, verification_time=0, benchmark_time=0, strategy_time=0, framework_time=0,
                     timestamp="2026-11-24 00:00:00.000000+00:00")
        cache[k] = entry
    doc = {"device_name": "evo-landscape", "kernel_name": name, "problem_size": [1], "tune_params_keys": names,
           "tune_params": {n: knobs[n] for n in names}, "objective": "time", "cache": cache}
    json.dump(doc, open(path, "w"))


def bests_after(sequence, budgets, best_of):
    """sequence: configs (tuples) in evaluation order; the best among the first N distinct ones."""
    out, seen, best = {}, set(), math.inf
    want = sorted(budgets)
    i = 0
    for key in sequence:
        if key in seen:
            continue
        seen.add(key)
        t = best_of(key)
        if t is not None:
            best = min(best, t)
        while i < len(want) and len(seen) >= want[i]:
            out[want[i]] = best
            i += 1
    while i < len(want):
        out[want[i]] = best  # the strategy stopped early: what it had
        i += 1
    return out


def run_kt(kt, strategy, cache, names, knobs, points, budget, seed):
    """Kernel Tuner at max_fevals = budget; a strategy that revisits configurations (its max_fevals
    counts them) and so stops short of `budget` distinct ones is run again, same seed, with twice
    the max_fevals (up to 8x), so that it is not cut short by the way it counts."""
    import numpy
    valid = set(points)
    def restrict(**p):
        return tuple(p[n] for n in names) in valid
    seq = []
    for factor in (1, 2, 4, 8):
        random.seed(seed)
        numpy.random.seed(seed)
        opts = {"max_fevals": budget * factor, "searchspace_construction_options": {"framework": "bruteforce"}}
        res, _ = kt.tune_kernel("landscape", "__global__ void landscape() {}", 1, [], {n: knobs[n] for n in names},
                                restrictions=[restrict], cache=str(cache), simulation_mode=True, strategy=strategy,
                                strategy_options=opts, verbose=False, quiet=True)
        seq = [tuple(r[n] for n in names) for r in res]
        if len(set(seq)) >= budget:
            break
    return seq


def run_evo(evo, landscape, strategy, budget, seed, names):
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "evo.db")
        subprocess.run([evo, "--db", db, "run", "--replay", str(landscape), "--budget", str(budget), "--seed", str(seed),
                        "--strategy", strategy, "-q", "--no-sanitize"], check=True, capture_output=True)
        con = sqlite3.connect(db)
        rows = con.execute("SELECT c.config_json FROM evaluations e JOIN candidates c "
                           "ON c.profile = e.profile AND c.config_hash = e.config_hash "
                           "WHERE e.reused = 0 ORDER BY e.id").fetchall()
        return [tuple(json.loads(r[0])[n] for n in names) for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("landscapes", nargs="*")
    ap.add_argument("--evo", default=str(ROOT / "build" / "evo"))
    ap.add_argument("--evo-strategies", default="evo,random")
    ap.add_argument("--kt-src", default=os.environ.get("KT_SRC"))
    ap.add_argument("--kt-stubs", default=os.environ.get("KT_STUBS"))
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--shares", default="0.1,0.2,0.3")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out")
    ap.add_argument("--json")
    a = ap.parse_args()
    paths = [Path(p) for p in a.landscapes] or sorted(p for p in (ROOT / "tests" / "data").glob("landscape_*.json")
                                                       if "synthetic" not in p.name)
    src = kt_source(a.kt_src)
    stubs = kt_stubs(a.kt_stubs)
    sys.path[:0] = ([stubs] if stubs else []) + [str(src)]
    try:
        import kernel_tuner as kt
    except ImportError as e:
        sys.exit(f"kt_compare: Kernel Tuner from {src} does not import ({e}): scripts/install-deps.sh --bench, and "
                 "--kt-stubs DIR (or KT_STUBS, EVO_SHARED_DIR) for a python-constraint2 stand-in")
    import logging
    logging.disable(logging.WARNING)
    shares = [float(s) for s in a.shares.split(",")]
    results, lines = {}, []
    cmd = "python3 bench/kt_compare.py " + " ".join(sys.argv[1:])
    lines.append(f"`{cmd}` on {datetime.date.today()}, Kernel Tuner {KT_COMMIT[:7]} (1.4.0) in simulation mode, "
                 f"{a.seeds} seeds; cell: share of seeds within 2 % of the landscape's best, then the mean best (µs).\n")
    for path in paths:
        d, names, knobs, points, best = load_landscape(path)
        status_of = {tuple(c["knobs"][n] for n in names): c["status"] for c in d["configs"]}
        budgets = [math.ceil(s * len(points)) for s in shares]
        best_of = lambda k: points.get(k)
        rows = {}
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "cache.json"
            write_cache(cache, "landscape", names, knobs, points, status_of)
            runs = [("evo " + s, s) for s in a.evo_strategies.split(",") if s] + \
                   [("KT " + s, s) for s in a.strategies.split(",") if s]
            for label, s in runs:
                t0 = time.time()
                per_seed = []
                try:
                    for seed in range(a.seeds):
                        if label.startswith("evo"):  # evo does not plan by its budget: one run, its prefixes
                            seq = run_evo(a.evo, path, s, budgets[-1], seed, names)
                            per_seed.append(bests_after(seq, budgets, best_of))
                        else:  # Kernel Tuner's strategies may: one run per budget
                            got = {}
                            for b in budgets:
                                got[b] = bests_after(run_kt(kt, s, cache, names, knobs, points, b, seed), [b], best_of)[b]
                            per_seed.append(got)
                except Exception as e:  # a strategy that cannot run here says why, and the rest go on
                    print(f"{path.name}: {label}: cannot run: {type(e).__name__}: {e}", file=sys.stderr)
                    rows[label] = None
                    continue
                cells = {}
                for b in budgets:
                    v = [r[b] for r in per_seed]
                    near = 100.0 * sum(x <= best * 1.02 for x in v) / len(v)
                    finite = [x for x in v if math.isfinite(x)]
                    mean = sum(finite) / len(finite) if len(finite) == len(v) else math.inf
                    cells[b] = (near, mean)
                rows[label] = cells
                print(f"{path.name}: {label}: {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
        results[path.name] = {"best_us": best, "configs": len(points), "budgets": budgets,
                              "rows": {k: ({str(b): list(c) for b, c in v.items()} if v else None) for k, v in rows.items()}}
        lines.append(f"\n### {path.stem}\n\n{len(points)} configurations pass the constraints; best {best:.4g} µs.\n")
        lines.append("| strategy | " + " | ".join(f"{int(s * 100)}% ({b})" for s, b in zip(shares, budgets)) + " |")
        lines.append("| --- |" + " --- |" * len(budgets))
        for label, cells in rows.items():
            if cells is None:
                lines.append(f"| {label} | " + " | ".join("could not run" for _ in budgets) + " |")
            else:
                lines.append(f"| {label} | " + " | ".join(f"{cells[b][0]:.0f}% · {cells[b][1]:.4g}" for b in budgets) + " |")
        for b in budgets:
            kts = [(cells[b][0], -cells[b][1], label) for label, cells in rows.items() if cells and label.startswith("KT")]
            if kts:
                top = max(kts)
                lines.append(f"\nKernel Tuner's best at {b}: {top[2][3:]} ({top[0]:.0f}%, {-top[1]:.4g} µs).")
        if a.out:  # after each landscape, so a run cut short keeps what it did
            Path(a.out).write_text("\n".join(lines) + "\n")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    if a.json:
        Path(a.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
