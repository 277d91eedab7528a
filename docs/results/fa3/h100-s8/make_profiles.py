#!/usr/bin/env python3
"""The six MMA_PATH=3 profiles with STREAM_K in their space (scratch copies for the GPU calls of this pass):
the knob, its constraint, the 32 bytes of shared memory its share's bounds take, and partial_o / split_counter
sized for its halves. --ship rewrites profiles/ itself instead."""
import json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))
NAMES = ["sdpa_fp16_wgmma", "sdpa_fp16_wgmma_d128", "sdpa_fp8_wgmma", "sdpa_fp8_wgmma_d128",
         "sdpa_fp8pv_wgmma", "sdpa_fp8pv_wgmma_d128"]
SHAPES = {"partial_o": "STREAM_K * NUM_SMS * 2 * (HEAD_DIM / 2 + 6) * NUM_WARPS * 32 + 1",
          "split_counter": "STREAM_K * NUM_SMS * NUM_WARPS + 1"}


def stream_k(p):
    if "STREAM_K" in p["knobs"]:
        return p
    p["knobs"]["STREAM_K"] = [0, 1]
    p["baseline"]["STREAM_K"] = 0
    cons = []
    for c in p["constraints"]:
        if c == "NUM_WARPS < 12 || TILE_N <= 64 || PERSIST == 0" and p["defines"].get("IN_FP8") == 0:
            continue  # fp16: a lean producer (Q_LEAN) leaves three consumer warpgroups of 128-key tiles their 160
        cons.append(c.replace("256 + 1024", "256 + 32 * STREAM_K + 1024"))
    cons.append("STREAM_K == 0 || (MMA_PATH == 3 && PERSIST == 1)")
    p["constraints"] = cons
    p["launch"]["shared_bytes"] = p["launch"]["shared_bytes"].replace("256 + 1024", "256 + 32 * STREAM_K + 1024")
    for b in p["buffers"]:
        if b["name"] in SHAPES:
            b["shape"] = [SHAPES[b["name"]]]
    return p


def main():
    ship = "--ship" in sys.argv
    for n in NAMES:
        src = os.path.join(ROOT, "profiles", n + ".json")
        p = stream_k(json.load(open(src)))
        if ship:
            dst = src
        else:
            dst = os.path.join(HERE, "profiles", n + "_sk.json")
            p["name"] = n + "_sk"
            if n == "sdpa_fp16_wgmma_d128":  # (scratch only) fp16 D=128 at 160 and 192 keys, MMA_PATH=3
                p["knobs"]["TILE_N"] = sorted(set(p["knobs"]["TILE_N"]) | {160, 192})
                p["constraints"].append("TILE_N <= 128 || MMA_PATH == 3")
            p["template"] = os.path.relpath(os.path.join(ROOT, "templates", "sdpa.cu"), os.path.dirname(dst))
            if "reference" in p and "template" in p["reference"]:
                p["reference"]["template"] = os.path.relpath(os.path.join(ROOT, "templates/reference/sdpa_ref.cu"),
                                                             os.path.dirname(dst))
        with open(dst, "w") as f:
            json.dump(p, f, indent=2, ensure_ascii=False)
            f.write("\n")
        print(dst)


main()
