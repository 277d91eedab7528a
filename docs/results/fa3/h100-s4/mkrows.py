#!/usr/bin/env python3
"""ab rows: per profile, the fastest old configuration (its earlier sweep) and the two fastest with
three consumer warpgroups (this call's sweep), at the profile's long problem."""
import json, sys
S = sys.argv[1]
OLD = {"profiles/sdpa_fp16_wgmma.json": "docs/results/fa3/h100-final/fa3_check_sdpa_fp16_wgmma.json",
       "profiles/sdpa_fp8_wgmma.json": "docs/results/fa3/h100-final/fa3_check_sdpa_fp8_wgmma.json",
       "profiles/sdpa_fp8pv_wgmma.json": "docs/results/fa3/h100-s3/c5/check_sdpa_fp8pv_wgmma.json",
       ".sass/w12/sdpa_fp16_wgmma_d128_w12.json": "docs/results/fa3/h100-s3/c2/check_sdpa_fp16_wgmma_d128.json",
       ".sass/w12/sdpa_fp8pv_wgmma_d128_w12.json": "docs/results/fa3/h100-s3/c5/check_sdpa_fp8pv_wgmma_d128.json"}
rows = []
def spec(cfg): return ",".join("%s=%d" % kv for kv in cfg.items())
def ranked(path):
    try:
        r = list(json.load(open(path)).values())[0]
    except (OSError, ValueError, IndexError):
        return []
    t = [x for x in r.get("timing", []) if "long" in x["times_us"]]
    return sorted(t, key=lambda x: x["times_us"]["long"])
for prof, old in OLD.items():
    short = prof.split("/")[-1].replace(".json", "").replace("_w12", "").replace("sdpa_", "")
    for x in ranked(old)[:1]:
        rows.append({"name": "%s old %dx%d" % (short, x["cfg"]["TILE_M"], x["cfg"]["TILE_N"]), "profile": prof, "knobs": spec(x["cfg"])})
    new = [x for x in ranked("%s/check_%s.json" % (S, prof.split("/")[-1].replace(".json", ""))) if x["cfg"]["NUM_WARPS"] == 12]
    for i, x in enumerate(new[:2]):
        rows.append({"name": "%s w12 %dx%d #%d" % (short, x["cfg"]["TILE_M"], x["cfg"]["TILE_N"], i + 1), "profile": prof, "knobs": spec(x["cfg"])})
json.dump(rows, sys.stdout, indent=1)
