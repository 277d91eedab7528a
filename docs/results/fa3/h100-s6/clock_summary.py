# Summary of an nvidia-smi sampling (timestamp, SM clock, power, temperature, throttle reasons; csv, noheader):
# the clock's distribution over the samples in which the GPU was busy (power above 300 W), and the reasons.
import collections, sys
busy, reasons = [], collections.Counter()
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    if len(f) < 5 or not f[1].split()[0].isdigit():
        continue
    mhz, watts = int(f[1].split()[0]), float(f[2].split()[0])
    if watts > 300:
        busy.append((mhz, watts))
        reasons[{"0x0000000000000004": "SW power cap", "0x0000000000000000": "none"}.get(f[4], f[4])] += 1
busy.sort()
q = lambda p: busy[min(len(busy) - 1, int(p * len(busy)))][0] if busy else 0
w = sorted(b[1] for b in busy)
print("%s: %d busy samples (>300 W); SM clock MHz p10 %d, median %d, p90 %d, min %d, max %d; power median %.0f W, max %.0f W; reasons %s"
      % (sys.argv[1].split("/")[-1], len(busy), q(0.1), q(0.5), q(0.9), busy[0][0] if busy else 0, busy[-1][0] if busy else 0,
         w[len(w) // 2] if w else 0, w[-1] if w else 0, dict(reasons)))
