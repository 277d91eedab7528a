#!/usr/bin/env python3
"""Writes the row offsets of the sparse matrix Kernel Tuner's spmv example tunes on (spmv.py):
131 072 rows, 0.1 % of 65 536 columns filled, 8 589 934 non-zeros, each row's start drawn as the
example draws it (the sorted offsets of uniform draws over the non-zeros, so row lengths vary around
65.5), seeded so that every machine writes the same bytes. Little-endian int32, nrows + 1 of them:
the raw fill of spmv.json's `rows` buffer. Standard library only.

  examples/kernel_tuner/make-spmv-rows.py [OUT]     (default: kernels/spmv_rows.bin beside this script)
"""
import random
import struct
import sys
from pathlib import Path

NROWS, NCOLS = 131072, 65536
NNZ = int(NROWS * NCOLS * 0.001)

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "kernels" / "spmv_rows.bin"
rng = random.Random(20261128)
offsets = [0] + sorted(int(rng.random() * NNZ) for _ in range(NROWS - 1)) + [NNZ]
out.parent.mkdir(parents=True, exist_ok=True)
out.write_bytes(struct.pack("<%di" % len(offsets), *offsets))
print(f"make-spmv-rows: {len(offsets)} row offsets, {NNZ} non-zeros, into {out}")
