"""The trusted reference of templates/examples/stencil3.cu (profiles/stencil3.json).

evo runs it as `python3 ../templates/examples/stencil3_ref.py {in} {out}` from the profile's folder
(docs/profiles.md "reference.command"): the input folder holds X.npy (float32, the buffer's shape)
and problem.json (sizes, scalars, the inputs' and outputs' dtypes and shapes); the script writes
Y.npy, float32 of Y's shape, into the output folder. Computed in float64, rounded once.
"""
import json
import sys
from pathlib import Path

import numpy as np


def main(inp: Path, out: Path) -> None:
    meta = json.loads((inp / "problem.json").read_text())
    w = meta["scalars"]
    x = np.load(inp / "X.npy").astype(np.float64)
    left = np.concatenate((x[:1], x[:-1]))    # X[i-1], X[-1] clamped to X[0]
    right = np.concatenate((x[1:], x[-1:]))   # X[i+1], X[N] clamped to X[N-1]
    y = w["w0"] * left + w["w1"] * x + w["w2"] * right
    np.save(out / "Y.npy", y.astype(np.float32))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
