"""How much a prior on threads per block would raise the chance that a uniform draw lands within
2 % of a landscape's optimum (forty-first session, docs/results/search-small-budgets.md).

For each landscape, every measured configuration's log2 threads per block (the product of its
launch block expressions) is weighed by w = floor + (1 - floor) exp(-(log2 T - centre)^2 / (2 width^2));
the lift is the mean weight of the configurations within 2 % of the optimum over the mean weight of
all. The prior's parameters are fitted (the mean log lift, on a grid) leave-one-kernel-out: on
every landscape of the other kernels, reported on the held-out kernel's. Two forms: a global
centre, and a centre at the baseline's threads per block (only the width and floor fitted).

  python3 docs/results/kt100/threads/prior_lift.py LANDSCAPE.json...
"""
import json, math, sys


def kernel(name):  # the kernel a landscape belongs to, as the leave-one-kernel-out splits count them
    n = name.removeprefix('landscape_')
    for s in ('_h100', '_h200', '_2080ti'):
        n = n.replace(s, '')
    n = n.replace('_d128', '')
    return 'sdpa_fp8' if n.startswith('sdpa_fp8_') and 'wgmma' not in n else n


def log2_threads(landscape, knobs):
    env = {k: float(v) for k, v in landscape['space'].get('defines', {}).items()}
    env.update(knobs)
    t = 1
    for e in landscape['space']['launch']['block']:
        t *= int(eval(e, {}, env))  # the recorded expressions: arithmetic and comparisons only
    return math.log2(t)


rows, base = {}, {}
for f in sys.argv[1:]:
    d = json.load(open(f))
    name = f.split('/')[-1][:-5]
    cs = [c for c in d['configs'] if c['status'] == 'measured']
    best = min(c['p50_us'] for c in cs)
    rows[name] = [(log2_threads(d, c['knobs']), c['p50_us'] <= 1.02 * best) for c in cs]
    base[name] = log2_threads(d, d['baseline'])


def weight(t, centre, width, floor):
    return floor + (1 - floor) * math.exp(-(t - centre) ** 2 / (2 * width * width))


def lift(name, centre, width, floor):
    r = rows[name]
    top = [t for t, near in r if near]
    return (sum(weight(t, centre, width, floor) for t in top) / len(top)) / (
        sum(weight(t, centre, width, floor) for t, _ in r) / len(r))


floors = (0.02, 0.1, 0.25, 0.5)
forms = {
    'global': ([(c / 4, w / 4, e) for c in range(16, 41) for w in range(2, 13) for e in floors],
               lambda n, p: lift(n, *p)),
    'baseline': ([(w / 4, e) for w in range(1, 13) for e in floors],
                 lambda n, p: lift(n, base[n], *p)),
}
names = list(rows)
for form, (grid, lift_of) in forms.items():
    print(f'--- prior centred {"where fitted" if form == "global" else "on the baseline"}')
    total = 0
    for k in sorted(set(map(kernel, names))):
        train = [n for n in names if kernel(n) != k]
        p = max(grid, key=lambda p: sum(math.log(lift_of(n, p)) for n in train))
        for n in names:
            if kernel(n) == k:
                x = lift_of(n, p)
                total += math.log(x)
                print(f'{n:40s} baseline log2 T {base[n]:4.1f}  prior {str(p):20s} lift {x:.2f}')
    print(f'held-out mean log lift {total / len(names):+.3f}')
