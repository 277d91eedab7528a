#!/usr/bin/env python3
"""Scratch profiles: the two wgmma profiles at HEAD_DIM=128, for sdpa_check.py's whole-space GREEN.

    python3 tests/gpu/wgmma_d128.py DIR      # writes DIR/sdpa_fp16_wgmma_d128.json, DIR/sdpa_fp8_wgmma_d128.json

The shipped wgmma profiles are D=64 only; the template's MMA_PATH=2 serves D=128 too, and GREEN
must hold there as well. Same knobs and constraints; HEAD_DIM, the problems' D and, for fp8 (rows
of 128 bytes at D=128), the tensor maps' swizzle follow D; MIN_BLOCKS stays 1 (at D=128 the P·V accumulators alone need 64
registers a thread: under a 128-register cap ptxas spills or cannot allocate the wgmma operands, on
the H100 2026-11-23: 93 of the capped configurations). Paths inside are made absolute.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in ("sdpa_fp16_wgmma", "sdpa_fp8_wgmma"):
        p = json.load(open(os.path.join(ROOT, "profiles", name + ".json")))
        p["name"] = name + "_d128"
        p["defines"]["HEAD_DIM"] = 128
        p["reference"]["defines"]["HEAD_DIM"] = 128
        for prob in p["problems"]:
            prob["sizes"]["D"] = 128
        p["constraints"].append("MIN_BLOCKS == 1")
        for tm in p.get("tensor_maps", []):
            tm["swizzle"] = 128  # fp16 boxes are 64 wide (128 bytes) already; fp8 rows are now 128 bytes
        p["template"] = os.path.join(ROOT, "profiles", p["template"])
        p["reference"]["template"] = os.path.join(ROOT, "profiles", p["reference"]["template"])
        path = os.path.join(out, name + "_d128.json")
        json.dump(p, open(path, "w"), indent=1)
        print(path)


if __name__ == "__main__":
    main()
