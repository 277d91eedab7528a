#!/usr/bin/env python3
"""evo's rows of a bench/kt_compare.py --json run set against the Kernel Tuner rows already written in
kt_compare's Markdown tables (Kernel Tuner's strategies in simulation mode repeat per seed, but for
differential evolution and Bayesian optimisation, whose rows are one draw of a spread: docs/search.md). For each landscape: evo's score and
shares within 2 %, Kernel Tuner's best score and best share at each budget, and whether evo is at or
above them.
  python3 docs/results/kt100/stall/against_kt.py EVO.json TABLE.md [TABLE.md ...]"""
import json
import re
import sys


def kt_rows(paths):
    rows = {}  # landscape -> strategy -> (score, [shares])
    for path in paths:
        cur = None
        for line in open(path, encoding="utf-8"):
            m = re.match(r"### (landscape_\S+)", line)
            if m:
                cur = m.group(1)
                continue
            m = re.match(r"\| KT (\S+) \| (-?\d+\.\d+|nan)(?: ± \S+)? \|(.*)\|\s*$", line)  # rows with a score
            if cur and m:
                shares = [float(x) for x in re.findall(r"([0-9.]+)% ·", m.group(3))]
                rows.setdefault(cur, {})[m.group(1)] = (float(m.group(2)), shares)
    return rows


def main():
    evo = json.load(open(sys.argv[1]))
    kt = kt_rows(sys.argv[2:])
    print("| landscape (budgets) | evo score | Kernel Tuner's best score | evo shares | Kernel Tuner's best shares | at or above |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name, r in evo.items():
        stem = name.removesuffix(".json")
        row = r["rows"].get("evo evo")
        if not row or stem not in kt:
            continue
        budgets = [str(b) for b in r["budgets"]]
        shares = [row[b][0] for b in budgets]
        best_score = max(kt[stem].items(), key=lambda kv: kv[1][0])
        same = [v for v in kt[stem].values() if len(v[1]) == len(budgets)]
        if not same:
            continue
        best_shares = [max(v[1][i] for v in same) for i in range(len(budgets))]
        above = [s >= k for s, k in zip(shares, best_shares)]
        verdict = ("score" if row["score"] >= best_score[1][0] else "not score") + "; shares " + (
            "all" if all(above) else "not at " + ", ".join(b for b, a in zip(budgets, above) if not a))
        print(f"| {stem.removeprefix('landscape_')} ({'/'.join(budgets)}) | {row['score']:.3f} | {best_score[1][0]:.3f} ({best_score[0]}) | "
              f"{'/'.join(f'{s:.0f}' for s in shares)} | {'/'.join(f'{s:.0f}' for s in best_shares)} | {verdict} |")


if __name__ == "__main__":
    main()
