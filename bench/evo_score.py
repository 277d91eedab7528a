#!/usr/bin/env python3
"""evo's rows of bench/kt_compare.py alone, without Kernel Tuner: for one evo strategy (with its
options) on each landscape, the autotuning methodology's score with its bootstrap standard error and
the shares within 2 % of the optimum at the default budgets, and the score as the methodology's software
aggregates runs (the rank score: kt_compare's module docstring), over seeds FROM .. FROM+SEEDS-1 (--seed-from,
0 unless told: a variant chosen on seeds 0-99 is confirmed on seeds it was not chosen on), through
`evo run --replay` and kt_compare's own functions (so the figures are kt_compare's evo rows).

  python3 bench/evo_score.py [--evo build/evo] [--seeds 100] [--seed-from 0] [--options blend=0:gp_ard=0] LANDSCAPE...

--options: colon-separated K=V, as kt_compare's `evo:K=V:...` strategies take them ('' : the default).
Seeds run two at a time. The last line is the sum of the scores (and of the rank scores).
"""
import argparse, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kt_compare as kc


def evo_curves(evo, landscape, strategy, seed_from, seeds, jobs):
    """One landscape's methodology score, its optimum, its default budgets, and the best-so-far curve
    of each seed from seed_from (`jobs` seeds at a time) up to the larger of the score's range and
    the budgets."""
    _, names, _, points, best = kc.load_landscape(landscape)
    times = [t for t in points.values() if t is not None]
    ms = kc.MethodologyScore(times, sum(1 for t in points.values() if t is None))
    budgets = kc.default_budgets(len(points))
    top = max(ms.end, max(budgets))

    def curve(seed):
        return kc.best_curve(kc.run_evo(evo, landscape, strategy, top, seed, names), top, points.get)

    with ThreadPoolExecutor(jobs) as ex:
        return ms, best, budgets, list(ex.map(curve, range(seed_from, seed_from + seeds)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("landscapes", nargs="+")
    ap.add_argument("--evo", default=str(kc.ROOT / "build" / "evo"))
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--seed-from", type=int, default=0)
    ap.add_argument("--options", default="")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    strategy = "evo:" + a.options if a.options else "evo"
    total = ranked = 0.0
    for land in a.landscapes:
        ms, best, budgets, curves = evo_curves(a.evo, land, strategy, a.seed_from, a.seeds, a.jobs)
        score = ms.score(curves)
        shares = [round(100 * sum(c[b - 1] <= best * 1.02 for c in curves) / len(curves)) for b in budgets]
        total += score
        rank_score = ms.score_ranks(curves)
        ranked += rank_score
        name = Path(land).stem.removeprefix("landscape_")
        print(f"{name:36s} {score:7.3f} ±{ms.score_se(curves):.3f}  shares {'/'.join(map(str, shares))} "
              f"({'/'.join(map(str, budgets))})  rank {rank_score:.3f}", flush=True)
    print(f"{'SUM':36s} {total:7.3f}  rank {ranked:.3f}")


if __name__ == "__main__":
    main()
