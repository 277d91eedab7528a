"""How much a prior on threads per block would raise the chance that a uniform draw lands within
2 % of a landscape's optimum (forty-first session, docs/results/search-small-budgets.md).

For each landscape, every measured configuration's log2 threads per block (the product of its
launch block expressions) is weighed by w = floor + (1 - floor) exp(-(log2 T - centre)^2 / (2 width^2));
the lift is the mean weight of the configurations within 2 % of the optimum over the mean weight of
all. The prior's parameters are fitted (the mean log lift, on a grid) leave-one-kernel-out: on
every landscape of the other kernels, reported on the held-out kernel's. Two forms: a global
centre, and a centre at the baseline's threads per block (only the width and floor fitted). Then
the same centred on the baseline for two more launch quantities: blocks (the grid's product) and
threads in all (blocks x threads per block), on the landscapes whose grid expressions evaluate here.

  python3 docs/results/kt100/threads/prior_lift.py LANDSCAPE.json...
"""
import json, math, sys


def kernel(name):  # the kernel a landscape belongs to, as the leave-one-kernel-out splits count them
    n = name.removeprefix('landscape_')
    for s in ('_h100', '_h200', '_2080ti'):
        n = n.replace(s, '')
    n = n.replace('_d128', '')
    return 'sdpa_fp8' if n.startswith('sdpa_fp8_') and 'wgmma' not in n else n


def log2_launch(landscape, knobs, parts=('block',)):
    space = landscape['space']
    env = {k: float(v) for k, v in space.get('defines', {}).items()}
    problem = [p for p in space['problems'] if p['name'] == space.get('objective')] or space['problems']
    env.update(problem[0]['sizes'])
    env.update(knobs)
    env.update(cdiv=lambda a, b: -(-a // b), min=min, max=max)
    t = 1
    for part in parts:
        for e in space['launch'][part]:
            t *= eval(e, {}, env)  # the recorded expressions: arithmetic, comparisons, cdiv, min, max
    return math.log2(max(1, t))


def read(parts):
    """Each landscape's measured configurations as (log2 of the launch quantity, within 2 %), and
    its baseline's log2; a landscape whose expressions need more than its recorded sizes is left out."""
    rows, base = {}, {}
    for f in sys.argv[1:]:
        d = json.load(open(f))
        name = f.split('/')[-1][:-5]
        cs = [c for c in d['configs'] if c['status'] == 'measured']
        best = min(c['p50_us'] for c in cs)
        try:
            rows[name] = [(log2_launch(d, c['knobs'], parts), c['p50_us'] <= 1.02 * best) for c in cs]
            base[name] = log2_launch(d, d['baseline'], parts)
        except Exception:
            rows.pop(name, None)
    return rows, base


rows, base = read(('block',))


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


# The same, centred on the baseline, for blocks and for threads in all.
grid = [(w / 4, e) for w in range(1, 17) for e in floors]
for label, parts in (('blocks', ('grid',)), ('threads in all', ('grid', 'block'))):
    rows, base = read(parts)
    names = list(rows)
    total = 0
    for k in sorted(set(map(kernel, names))):
        train = [n for n in names if kernel(n) != k]
        p = max(grid, key=lambda p: sum(math.log(lift(n, base[n], *p)) for n in train))
        total += sum(math.log(lift(n, base[n], *p)) for n in names if kernel(n) == k)
    print(f'--- {label}, centred on the baseline: held-out mean log lift {total / len(names):+.3f} over {len(names)} landscapes')

