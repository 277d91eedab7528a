#!/usr/bin/env python3
"""evo's strategy options side by side on recorded landscapes, at the smallest budgets.

For each landscape (tests/data/landscape_*.json by default) and each variant (a set of `-o K=V`
options for `evo run --replay`, or "default"), N seeded runs; the table gives the share of seeds
whose best median after the first B new evaluations (failures counted) is within 2 % of the
landscape's best. Budgets: 25, 50, 100 and 200 evaluations, or 5, 10, 20 and 30 % of the valid
configurations when there are fewer than 2 000 (as bench/kt_compare.py). Used to choose the
search's defaults by cross-validation (docs/search.md, "Small budgets"): tune on some landscapes,
report on the others.

  python3 bench/search_options.py --evo build/evo --variants "default;initial=5;initial=5,explore=0.1" \\
      [--seeds 20] [LANDSCAPE ...] [--out FILE.md]
"""
import argparse, datetime, json, math, os, sqlite3, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def landscape_times(path):
    d = json.load(open(path))
    return {tuple(sorted(c["knobs"].items())): (c["p50_us"] if c["status"] == "measured" else math.inf)
            for c in d["configs"]}


def run(evo, path, seed, budget, options):
    with tempfile.TemporaryDirectory() as t:
        db = os.path.join(t, "e.db")
        cmd = [evo, "--db", db, "run", "--replay", str(path), "--budget", str(budget), "--seed", str(seed), "-q",
               "--no-sanitize"]
        for o in options:
            cmd += ["-o", o]
        subprocess.run(cmd, check=True, capture_output=True)
        rows = sqlite3.connect(db).execute(
            "SELECT c.config_json FROM evaluations e JOIN candidates c ON c.profile = e.profile AND "
            "c.config_hash = e.config_hash WHERE e.reused = 0 ORDER BY e.id").fetchall()
        return [tuple(sorted(json.loads(r[0]).items())) for r in rows]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("landscapes", nargs="*")
    ap.add_argument("--evo", default=str(ROOT / "build" / "evo"))
    ap.add_argument("--variants", default="default", help="';'-separated; each 'default' or K=V,K=V")
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--out")
    a = ap.parse_args()
    paths = [Path(p) for p in a.landscapes] or sorted(p for p in (ROOT / "tests" / "data").glob("landscape_*.json")
                                                       if "synthetic" not in p.name)
    variants = [v.strip() for v in a.variants.split(";") if v.strip()]
    lines = [f"`python3 bench/search_options.py {' '.join(sys.argv[1:])}` on {datetime.date.today()}: share of "
             f"{a.seeds} seeds within 2 % of the landscape's best after B new evaluations.", ""]
    for path in paths:
        times = landscape_times(path)
        best, n = min(times.values()), len(times)
        budgets = [25, 50, 100, 200] if n >= 2000 else [max(1, math.ceil(s * n)) for s in (0.05, 0.1, 0.2, 0.3)]
        lines += [f"**{path.stem}** ({n} configurations)", "",
                  "| variant | " + " | ".join(f"B = {b}" for b in budgets) + " |",
                  "| --- |" + " --- |" * len(budgets)]
        for v in variants:
            options = [] if v == "default" else v.split(",")
            with ThreadPoolExecutor(a.jobs) as ex:
                runs = list(ex.map(lambda s: run(a.evo, path, s, budgets[-1], options), range(a.seeds)))
            cells = []
            for b in budgets:
                bests = [min([times.get(k, math.inf) for k in r[:b]] + [math.inf]) for r in runs]
                cells.append(f"{100 * sum(x <= best * 1.02 for x in bests) / a.seeds:.0f} %")
            lines.append(f"| {v} | " + " | ".join(cells) + " |")
            print(lines[-1], path.stem, flush=True)
        lines.append("")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
