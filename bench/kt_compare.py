#!/usr/bin/env python3
"""Kernel Tuner's strategies beside evo's, on the same recorded landscapes.

Each evo landscape (tests/data/landscape_*.json, the complete valid space of a profile) becomes a
Kernel Tuner cache file, and Kernel Tuner 1.4.0 (its public source, with Debian's Python packages)
runs its strategies on it in simulation mode. evo runs on the same landscape through `evo run --replay`. For each budget and seed, the best median among the first N
*distinct* configurations evaluated (failures count) is taken; the table gives the share of seeds
within 2 % of the landscape's best and the mean best. Budgets: 25, 50, 100 and 200 evaluations, or
5, 10, 20 and 30 % of the configurations that pass the constraints when there are fewer than 2 000
(--budgets or --shares to choose others).

Kernel Tuner's strategies run with their own defaults, which at the pinned commit (96a6abc) are the
hyperparameters tuned in "Tuning the tuner" (Kernel Tuner commits 7f3a4a3d "Updated hyperparameters
to newly tuned defaults" and 2097092c "Set new hyperparameter values for various strategies after
more extensive training"; docs/results/search-small-budgets-kt.md says which values and how they
compare with the benchmark hub's brute-forced hyperparameter caches).

Beside them, the autotuning methodology's aggregate performance score (Willemsen, van Nieuwpoort,
van Werkhoven, "A methodology for comparing optimization algorithms for auto-tuning", FGCS 2024;
its software, autotuning_methodology/baseline.py and visualize_experiments.py): at each budget M
the strategy's mean best B(M) is placed between random search's expected best R(M) (0) and the
optimum (1), P(M) = (B(M) - R(M)) / (optimum - R(M)), and the score is the mean of P over the
budgets of the methodology paper's evaluation: from the evaluations random search needs, in
expectation, to get 50 % of the way from the median to the optimum, to those it needs to get 96 %
of the way (cutoff_percentile_start 0.5, cutoff_percentile 0.96). R(M) is the methodology's
calculated random search without replacement: the value at index
round(M (N + 1) / (M + 1)) of all N configurations ordered worst first, failures the worst of all;
a budget at which R(M) is a failure or the optimum, or at which a seed has found nothing valid yet,
is left out of the mean (the methodology's NaN). Each strategy is scored on one run per seed to the
end of that range or the largest budget of the table, whichever is later (its first M distinct
configurations for every M), as the methodology reads one run's curve.

That "mean best" is this script's reading, kept as the `score` column since issue 36 began. The
methodology's software aggregates the runs over ranks instead: each run's best is replaced by its
rank among the space's valid times (get_indices_in_distribution), and the curve is the time at the
runs' average rank. Its aggregate score (report_experiments.get_strategy_scores, over time) fits
one isotonic least-squares curve to every run's ranks (a bagged mean of ranks); its curves over
evaluations (get_curve_over_fevals, for plots) take the median rank (np.nanmedian, rounded). Either
way a run that has found nothing valid yet is left out at that point, not the whole budget. The
`rank score` column is the aggregate's reading over evaluations: the same P(M), range and R(M), B(M)
the valid time at the rounded mean of the seeds' ranks (half to even, as np.round). The mean of
times counts a seed caught far from the optimum by how far in microseconds; the mean of ranks by
how many configurations are faster. The JSON also holds the median-rank score (random search is
above 0 there: the median of the best of M draws is better than its expectation).
docs/results/search-small-budgets.md compares them.

--curve 2,3,5,8 adds a second table per landscape: each strategy's mean best over the seeds, as a multiple
of the optimum, after each of those evaluation counts (each seed's run goes as far as the largest of them, the
score's range and the budgets): where along the score's range it is won or lost.

--reverse-values runs everything on the same landscapes with every knob's values listed in reverse order.
Several of Kernel Tuner's strategies start from, or fall back to, configurations taken in the lists' order
(Bayesian optimisation, once its acquisition is undefined, proposes the space from its first configuration
on), so at small budgets their results move with the order. evo takes no configuration from the lists'
order (it draws its first ones uniformly and ranks the rest by its model; only equal scores go in the
space's order); its scores in the two orders differ as its seeds draw other configurations (on Kernel Tuner's
convolution by about two standard errors; docs/results/search-small-budgets.md, "The order of the value
lists").

  scripts/install-deps.sh --bench
  KERNEL_TUNER_DIR=~/kernel_tuner python3 bench/kt_compare.py --evo build/evo --out docs/results/kt_compare.md [LANDSCAPE ...]

Kernel Tuner comes from --kt-src DIR (or $KT_SRC), a source tree used as it is, or else from
$KERNEL_TUNER_DIR, a clone of https://github.com/KernelTuner/kernel_tuner (git dir or work tree) or
that URL, whose commit 96a6abc is extracted. python-constraint2, which Debian does not package, may
be a stand-in folder: --kt-stubs DIR (or $KT_STUBS, or $EVO_SHARED_DIR/kernel_tuner_sim/stubs).
Run with Debian's python3 (the one with NumPy).
"""
import argparse, bisect, datetime, json, math, os, random, sqlite3, statistics, subprocess, sys, tempfile, time
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
    with open(path) as f:
        d = json.load(f)
    knobs = d["space"]["knobs"]  # name -> values, in the profile's order
    names = list(knobs)
    points = {}
    for c in d["configs"]:
        key = tuple(c["knobs"][n] for n in names)
        points[key] = c["p50_us"] if c["status"] == "measured" else None
    best = min(t for t in points.values() if t is not None)
    return d, names, knobs, points, best


def reversed_landscape(path, folder):
    """A copy of the landscape in `folder` with every knob's values listed in reverse order: the same
    configurations, medians and constraints; only the order a strategy may read from the lists differs."""
    d = json.loads(Path(path).read_text())
    d["space"]["knobs"] = {n: v[::-1] for n, v in d["space"]["knobs"].items()}
    out = Path(folder) / (Path(path).stem + "_reversed.json")
    out.write_text(json.dumps(d))
    return out


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
    curve = best_curve(sequence, max(budgets), best_of)
    return {b: curve[b - 1] for b in budgets}


def best_curve(sequence, top, best_of):
    """The best among the first M distinct configurations, for M = 1 .. top (inf before a valid one)."""
    out, seen, best = [], set(), math.inf
    for key in sequence:
        if key in seen:
            continue
        seen.add(key)
        t = best_of(key)
        if t is not None:
            best = min(best, t)
        out.append(best)
        if len(out) == top:
            break
    return out + [best] * (top - len(out))  # stopped early: what it had


def default_budgets(valid):
    """25/50/100/200 evaluations; 5/10/20/30 % of a space of fewer than 2 000 configurations."""
    if valid < 2000:
        return [max(1, math.ceil(s * valid)) for s in (0.05, 0.1, 0.2, 0.3)]
    return [25, 50, 100, 200]


class MethodologyScore:
    """The autotuning methodology's aggregate performance score on one landscape (module docstring)."""

    def __init__(self, times, failures, start_percentile=0.5, end_percentile=0.96):
        valid = sorted(times)  # best first (minimisation)
        self.optimum = valid[0]
        # All configurations worst first, failures the worst of all (include_nan=True).
        self.worst_first = [None] * failures + valid[::-1]
        self.valid = valid
        # The range: the methodology paper's evaluation (cutoff_percentile_start 0.5, cutoff_percentile 0.96).
        self.start = self.cutoff_fevals(start_percentile)
        self.end = max(self.start, self.cutoff_fevals(end_percentile))

    def cutoff_fevals(self, percentile):
        """searchspace_statistics.cutoff_point: the evaluations random search needs, in expectation, to
        get `percentile` of the way from the median to the optimum."""
        valid, n = self.valid, len(self.valid)
        median = valid[(n - 1) // 2] if n % 2 else (valid[n // 2 - 1] + valid[n // 2]) / 2
        target = self.optimum + (median - self.optimum) * (1 - percentile)
        i = next(k for k, v in enumerate(valid[::-1]) if v <= target)
        return max(1, math.ceil(i / (n + 1 - i)))

    def random_best(self, m):
        n = len(self.worst_first)
        return self.worst_first[min(n - 1, round(m * (n + 1) / (m + 1)))]

    def score(self, curves):
        """curves: per seed, the best after M = 1 .. end evaluations. The mean of P(M) over the range,
        B(M) the seeds' mean best (a budget where one has found nothing valid is left out)."""
        return self._mean_p(curves, lambda bests: sum(bests) / len(bests) if all(map(math.isfinite, bests)) else None)

    def _mean_p(self, curves, best_at):
        """The mean over the range of P(M), B(M) = best_at(the seeds' bests after M); a budget where
        best_at gives None, or R(M) is a failure or the optimum, is left out."""
        ps = []
        for m in range(self.start, self.end + 1):
            r = self.random_best(m)
            b = best_at([c[m - 1] for c in curves])
            if r is None or r == self.optimum or b is None:
                continue
            ps.append((b - r) / (self.optimum - r))
        return sum(ps) / len(ps) if ps else math.nan

    def rank_best(self, bests, average="mean"):
        """B(M) as the methodology's software aggregates runs: the valid time at the runs' mean (or
        median) rank among the space's valid times, rounded half to even as np.round; runs with
        nothing valid yet left out; None where no run has found one."""
        ranks = [bisect.bisect_left(self.valid, b) for b in bests if math.isfinite(b)]
        if not ranks:
            return None
        at = sum(ranks) / len(ranks) if average == "mean" else statistics.median(ranks)
        return self.valid[min(len(self.valid) - 1, round(at))]

    def score_ranks(self, curves, average="mean"):
        """The score with B(M) from rank_best: the methodology's own aggregation of runs."""
        return self._mean_p(curves, lambda bests: self.rank_best(bests, average))

    def score_se(self, curves, resamples=200, score=None):
        """The score's standard error over seeds: the spread of the score over bootstrap resamples of
        the seeds (a fixed generator, so a table is reproducible). Two variants whose scores differ by
        less than about twice this are not told apart by these seeds."""
        rng = random.Random(0)
        score = score or self.score
        scores = [score([curves[rng.randrange(len(curves))] for _ in curves]) for _ in range(resamples)]
        scores = [x for x in scores if math.isfinite(x)]
        if len(scores) < 2:
            return math.nan
        mean = sum(scores) / len(scores)
        return math.sqrt(sum((x - mean) ** 2 for x in scores) / (len(scores) - 1))


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
        # "evo:initial=3:explore=0.1": a strategy with its options (-o K=V each).
        name, _, opts = strategy.partition(":")
        cmd = [evo, "--db", db, "run", "--replay", str(landscape), "--budget", str(budget), "--seed", str(seed),
               "--strategy", name, "-q", "--no-sanitize"]
        for o in filter(None, opts.split(":")):
            # from=FILE: the landscape of a related task whose fastest configurations evo proposes first
            cmd += ["--transfer-from", o[5:]] if o.startswith("from=") else ["-o", o]
        subprocess.run(cmd, check=True, capture_output=True)
        con = sqlite3.connect(db)
        rows = con.execute("SELECT c.config_json FROM evaluations e JOIN candidates c "
                           "ON c.profile = e.profile AND c.config_hash = e.config_hash "
                           "WHERE e.reused = 0 ORDER BY e.id").fetchall()
        return [tuple(json.loads(r[0])[n] for n in names) for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("landscapes", nargs="*")
    ap.add_argument("--evo", default=str(ROOT / "build" / "evo"))
    ap.add_argument("--evo-strategies", default="evo,random",
                    help="evo's strategies, ','-separated; one with options as NAME:K=V:K=V is run with -o K=V each, "
                         "and from=FILE as --transfer-from FILE")
    ap.add_argument("--kt-src", default=os.environ.get("KT_SRC"))
    ap.add_argument("--kt-stubs", default=os.environ.get("KT_STUBS"))
    ap.add_argument("--strategies", default=",".join(STRATEGIES))
    ap.add_argument("--shares", help="budgets as shares of the valid configurations, e.g. 0.1,0.2,0.3")
    ap.add_argument("--budgets", help="budgets as evaluation counts, e.g. 25,50,100,200 (default: see above)")
    ap.add_argument("--reverse-values", action="store_true",
                    help="list every knob's values in reverse order (the same landscape): a strategy whose result "
                         "moves with the lists' order is reading the layout, not the landscape")
    ap.add_argument("--curve", help="evaluation counts, e.g. 2,3,5,8,12: a table of each strategy's mean best "
                                    "(a multiple of the optimum) after each")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--seed-from", type=int, default=0,
                    help="the first seed (default 0): seeds N .. N+seeds-1, for every strategy, so a score can be "
                         "checked on seeds no choice was made on")
    ap.add_argument("--out")
    ap.add_argument("--json")
    a = ap.parse_args()
    curve_at = [int(m) for m in a.curve.split(",")] if a.curve else []
    if any(m < 1 for m in curve_at):
        sys.exit("kt_compare: --curve takes evaluation counts of 1 or more")
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
    results, lines = {}, []
    cmd = "python3 bench/kt_compare.py " + " ".join(sys.argv[1:])
    lines.append(f"`{cmd}` on {datetime.date.today()}, Kernel Tuner {KT_COMMIT[:7]} (1.4.0) in simulation mode, "
                 f"{a.seeds} seeds ({a.seed_from}-{a.seed_from + a.seeds - 1}); cell: share of seeds within 2 % of the landscape's best, then the mean best (µs); "
                 f"score: the autotuning methodology's aggregate performance score (0: random search, 1: the optimum) over the seeds' mean best ± its standard error over the seeds (bootstrap); "
                 f"rank score: the same score over the time at the seeds' mean rank among the space's valid times, as the methodology's software aggregates runs (the module docstring).\n")
    order_dir = tempfile.TemporaryDirectory() if a.reverse_values else None  # the reversed copies
    for path in paths:
        if a.reverse_values:  # evo reads the landscape's own file: a copy with the lists reversed
            path = reversed_landscape(path, Path(order_dir.name))
        d, names, knobs, points, best = load_landscape(path)
        status_of = {tuple(c["knobs"][n] for n in names): c["status"] for c in d["configs"]}
        if a.budgets:
            budgets = [int(b) for b in a.budgets.split(",")]
        elif a.shares:
            budgets = [max(1, math.ceil(float(s) * len(points))) for s in a.shares.split(",")]
        else:
            budgets = default_budgets(len(points))
        best_of = lambda k: points.get(k)
        times = [t for t in points.values() if t is not None]
        methodology = MethodologyScore(times, len(points) - len(times))
        rows = {}
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "cache.json"
            write_cache(cache, "landscape", names, knobs, points, status_of)
            runs = [("evo " + s, s) for s in a.evo_strategies.split(",") if s] + \
                   [("KT " + s, s) for s in a.strategies.split(",") if s]
            for label, s in runs:
                t0 = time.time()
                per_seed, curves = [], []
                longest = max(budgets[-1], methodology.end, *curve_at)
                try:
                    for seed in range(a.seed_from, a.seed_from + a.seeds):
                        if label.startswith("evo"):  # evo does not plan by its budget: one run, its prefixes
                            seq = run_evo(a.evo, path, s, longest, seed, names)
                            per_seed.append(bests_after(seq, budgets, best_of))
                        else:  # Kernel Tuner's strategies may: one run per budget
                            got = {}
                            for b in budgets:
                                seq = run_kt(kt, s, cache, names, knobs, points, b, seed)
                                got[b] = bests_after(seq, [b], best_of)[b]
                            per_seed.append(got)
                            if longest > budgets[-1]:
                                seq = run_kt(kt, s, cache, names, knobs, points, longest, seed)
                        curves.append(best_curve(seq, longest, best_of))
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
                scored = [c[:methodology.end] for c in curves]
                cells["score"] = methodology.score(scored)
                cells["score_se"] = methodology.score_se(scored)
                cells["rank_score"] = methodology.score_ranks(scored)
                cells["rank_score_se"] = methodology.score_se(scored, score=methodology.score_ranks)
                cells["median_rank"] = methodology.score_ranks(scored, "median")
                for m in curve_at:  # the mean best after m, where every seed has found a valid one
                    v = [c[m - 1] for c in curves]
                    cells[f"curve:{m}"] = sum(v) / len(v) / best if all(map(math.isfinite, v)) else math.inf
                rows[label] = cells
                print(f"{path.name}: {label}: {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
        results[path.name] = {"best_us": best, "configs": len(points), "budgets": budgets,
                              "score_range": [methodology.start, methodology.end],
                              "rows": {k: ({str(b): (c if isinstance(b, str) else list(c)) for b, c in v.items()} if v else None)
                                       for k, v in rows.items()}}
        order_note = "Every knob's values listed in reverse order. " if a.reverse_values else ""
        lines.append(f"\n### {path.stem}\n\n{order_note}{len(points)} configurations pass the constraints; best {best:.4g} µs; "
                     f"score over {methodology.start} to {methodology.end} evaluations.\n")
        head = [f"{b} ({100 * b / len(points):.0f}%)" for b in budgets]
        lines.append("| strategy | score | rank score | " + " | ".join(head) + " |")
        lines.append("| --- | --- | --- |" + " --- |" * len(budgets))
        for label, cells in rows.items():
            if cells is None:
                lines.append(f"| {label} | could not run | could not run | " + " | ".join("could not run" for _ in budgets) + " |")
            else:
                lines.append(f"| {label} | {cells['score']:.3f} ± {cells['score_se']:.3f} | "
                             f"{cells['rank_score']:.3f} ± {cells['rank_score_se']:.3f} | " +
                             " | ".join(f"{cells[b][0]:.0f}% · {cells[b][1]:.4g}" for b in budgets) + " |")
        kt_scores = [(cells["score"], label) for label, cells in rows.items()
                     if cells and label.startswith("KT") and math.isfinite(cells["score"])]
        if kt_scores:
            top = max(kt_scores)
            lines.append(f"\nKernel Tuner's best score: {top[1][3:]} ({top[0]:.3f}).")
        kt_ranked = [(cells["rank_score"], label) for label, cells in rows.items()
                     if cells and label.startswith("KT") and math.isfinite(cells["rank_score"])]
        if kt_ranked:
            top = max(kt_ranked)
            lines.append(f"\nKernel Tuner's best rank score: {top[1][3:]} ({top[0]:.3f}).")
        for b in budgets:
            kts = [(cells[b][0], -cells[b][1], label) for label, cells in rows.items() if cells and label.startswith("KT")]
            if kts:
                top = max(kts)
                lines.append(f"\nKernel Tuner's best at {b}: {top[2][3:]} ({top[0]:.0f}%, {-top[1]:.4g} µs).")
        if curve_at:
            lines.append(f"\nMean best after each number of evaluations, as a multiple of the best ({a.seeds} seeds):\n")
            lines.append("| strategy | " + " | ".join(str(m) for m in curve_at) + " |")
            lines.append("| --- |" + " --- |" * len(curve_at))
            for label, cells in rows.items():
                if cells:
                    lines.append(f"| {label} | " + " | ".join(f"{cells[f'curve:{m}']:.4f}" for m in curve_at) + " |")
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
