#!/usr/bin/env python3
"""Writes the two point sets Kernel Tuner's expdist example tunes on (expdist.py): A, 3 000 2-D
points of standard normal coordinates stored coordinate by coordinate (x of every point, then y;
the kernel reads the first 2 000 of each), B = A + 1e-5 times standard normal noise (each point of
B sits next to its twin in A, so the cross term is about 2 000 and not a sum of underflows), and
their scales |0.01 N(0, 1)|. Seeded, so that every machine writes the same bytes; little-endian
float64: the raw fills of expdist.json's A, B, scale_A and scale_B. Standard library only.

  examples/kernel_tuner/make-expdist-points.py [DIR]     (default: kernels/ beside this script)
"""
import random
import struct
import sys
from pathlib import Path

ALLOC, NDIM = 3000, 2

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "kernels"
rng = random.Random(20261129)
a = [rng.gauss(0.0, 1.0) for _ in range(ALLOC * NDIM)]
b = [x + 1e-5 * rng.gauss(0.0, 1.0) for x in a]
scale_a = [abs(0.01 * rng.gauss(0.0, 1.0)) for _ in range(ALLOC)]
scale_b = [abs(0.01 * rng.gauss(0.0, 1.0)) for _ in range(ALLOC)]
out.mkdir(parents=True, exist_ok=True)
for name, values in (("A", a), ("B", b), ("scale_A", scale_a), ("scale_B", scale_b)):
    (out / f"expdist_{name}.bin").write_bytes(struct.pack("<%dd" % len(values), *values))
print(f"make-expdist-points: {ALLOC} points in {NDIM} dimensions, A, B and their scales, into {out}")
