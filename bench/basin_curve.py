#!/usr/bin/env python3
"""Where along a run an evo strategy finds a landscape's good region, read against random search:
at five budgets across the methodology's range (its start, end and the quarters between), evo's
mean best over the seeds as a multiple of the optimum, random search's expected best there
(kt_compare's MethodologyScore.random_best), the methodology's P(M) at that budget (0: random, 1:
the optimum) and how many seeds are still above --stuck times the optimum. A score near zero with
many seeds stuck says the search finds the basin no sooner than random draws would; few stuck and a
low P(M) at the end says it finds it and does not polish it.

  python3 bench/basin_curve.py LANDSCAPE [--evo build/evo] [--seeds 100] [--seed-from 0] [--options K=V:K=V] [--stuck 1.3]
"""
import argparse, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kt_compare as kc
from evo_score import evo_curves


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("landscape")
    ap.add_argument("--evo", default=str(kc.ROOT / "build" / "evo"))
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--seed-from", type=int, default=0)
    ap.add_argument("--options", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--stuck", type=float, default=1.3, help="a seed whose best is above this multiple of the optimum is stuck")
    a = ap.parse_args()
    strategy = "evo:" + a.options if a.options else "evo"
    ms, best, _, curves = evo_curves(a.evo, a.landscape, strategy, a.seed_from, a.seeds, a.jobs)
    print(f"score {ms.score(curves):.3f} over budgets {ms.start}..{ms.end}, seeds {a.seed_from}..{a.seed_from + a.seeds - 1}")
    mid = ms.start + ms.end
    for m in sorted({ms.start, mid // 4, mid // 2, 3 * mid // 4, ms.end}):
        r = ms.random_best(m)
        bests = [c[m - 1] for c in curves]
        mean = sum(bests) / len(bests)
        stuck = sum(b > a.stuck * best for b in bests)
        print(f"  {m:4d} evaluations: random {r / best:.3f}  evo {mean / best:.3f}  P(M) {(mean - r) / (best - r):+.3f}  "
              f"seeds above {a.stuck}x: {stuck}")


if __name__ == "__main__":
    main()
