#!/usr/bin/env python3
"""A tiny external proposer for `evo run --strategy external --proposer CMD` (docs/search.md).

Reads evo's document on stdin (task, history, insights) and writes {"configs": [...]} on stdout:
first the rule engine's suggestions for the elites, then one-knob steps from the fastest elite,
then the baseline's steps. Python 3 standard library only. It may propose something already
seen or invalid: evo drops those and says why in the next document's "rejected" list.
"""
import json
import sys


def main():
    doc = json.load(sys.stdin)
    want = doc["want"]
    knobs = doc["task"]["knobs"]
    out, seen = [], set()
    for r in doc["rejected"]:  # evo said no to these in this generation: propose something else
        seen.add(json.dumps(r["knobs"], sort_keys=True))

    def add(k, note, parents=()):
        key = json.dumps(k, sort_keys=True)
        if key not in seen and len(out) < want:
            seen.add(key)
            out.append({"knobs": k, "note": note, "parents": list(parents)})

    for ins in doc["insights"]:
        for s in ins["suggestions"]:
            add(s["knobs"], "rule " + s["rule"], [ins["parent"]])
    parents = [(e["knobs"], [e["config_hash"]]) for e in doc["history"]["elites"]]
    parents.append((doc["task"]["baseline"], []))
    for base, hashes in parents:
        for name, values in knobs.items():
            i = values.index(base[name])
            for j in (i + 1, i - 1):
                if 0 <= j < len(values):
                    add(dict(base, **{name: values[j]}), "step " + name, hashes)
    json.dump({"configs": out}, sys.stdout)


if __name__ == "__main__":
    main()
