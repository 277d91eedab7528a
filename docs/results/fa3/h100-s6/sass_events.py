# The order of the events that matter in each loop of a SASS listing, run-length encoded:
# G = a wgmma issued (HGMMA/QGMMA), W1 / W0 = WARPGROUP.DEPBAR.LE gsb0 0x1 / 0x0 (wait for S_j / for
# everything, i.e. the P·V), E = MUFU.EX2, M = FMUL (O's rescale among them), P = F2FP (P packed),
# C = a clock read (SDPA_TRACE's stamps), B = a backward conditional branch (a loop's end). Between two W0 the softmax's E should sit before the W0.
import gzip, re, sys
def events(lines):
    out = []
    for l in lines:
        m = re.match(r"\s+/\*([0-9a-f]{4,5})\*/\s+(.*?);", l)
        if not m: continue
        addr, ins = int(m.group(1), 16), m.group(2)
        op = re.sub(r"^@!?U?P\w+\s+", "", ins).split()[0]
        if op.startswith(("HGMMA", "QGMMA")): e = "G"
        elif "DEPBAR.LE gsb0, 0x1" in ins: e = "W1"
        elif "DEPBAR.LE gsb0, 0x0" in ins: e = "W0"
        elif op.startswith("MUFU.EX2"): e = "E"
        elif op == "FMUL": e = "M"
        elif op.startswith("F2FP"): e = "P"
        elif "SR_CLOCK" in ins: e = "C"
        else:
            b = re.search(r"BRA (?:\S+, )?(0x[0-9a-f]+)", ins)
            e = "B" if b and int(b.group(1), 16) < addr and ins.startswith("@") else None
        if e: out.append(e)
    return out
def rle(ev):
    s, prev, n = [], None, 0
    for e in ev + [None]:
        if e == prev: n += 1; continue
        if prev: s.append(prev + (str(n) if n > 1 else ""))
        prev, n = e, 1
    return " ".join(s)
for path in sys.argv[1:]:
    op = gzip.open if path.endswith(".gz") else open
    ev = events(op(path, "rt"))
    # loops: from the first G after a B (or the start) up to the next B
    text = rle(ev)
    print("== " + path.split("/")[-1])
    for seg in text.split(" B"):
        if "W1" in seg: print("   " + seg.strip())
