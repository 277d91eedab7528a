# For each SASS listing: every stretch from a `WARPGROUP.DEPBAR.LE gsb0, 0x1` (S_j landed) to the loop's
# backward branch; counts of MUFU.EX2 between that wait and the next `DEPBAR.LE gsb0, 0x0` (the P.V wait)
# and after it. One line per stretch: MUFU under the P.V / MUFU after its wait / instructions in the stretch.
import re, sys
for path in sys.argv[1:]:
    ins = [l for l in open(path) if re.match(r"\s+/\*[0-9a-f]{4,5}\*/", l)]
    out = []
    i = 0
    while i < len(ins):
        if "WARPGROUP.DEPBAR.LE gsb0, 0x1" in ins[i]:
            before = after = 0; seen0 = False; n = 0
            j = i + 1
            while j < len(ins):
                l = ins[j]; n += 1
                if "WARPGROUP.DEPBAR.LE gsb0, 0x0" in l: seen0 = True
                elif "MUFU.EX2" in l:
                    if seen0: after += 1
                    else: before += 1
                m = re.search(r"BRA (0x[0-9a-f]+)", l)
                addr = int(re.match(r"\s+/\*([0-9a-f]+)\*/", l).group(1), 16)
                if m and int(m.group(1), 16) < addr and "@" in l: break
                j += 1
            out.append("%d/%d/%d" % (before, after, n))
            i = j
        i += 1
    print("%-45s loops (MUFU before P.V wait / after / instructions): %s" % (path.split("/")[-1], " ".join(out)))
