#!/usr/bin/env python3
"""conext17-range.py GRID CLASS TOML [LO HI]: the share of entries where
multipath beat the better single path (download completion time), over
all entries and over those whose two paths' rates are within [LO, HI]
Mbit/s (default 1-50, the thesis's range), and the same for the entries
started on the worse path; each in-range share with its 95 % bootstrap
interval over scenario pairs (10,000 resamples, seed 1; an entry and its
twin with the paths swapped are one pair). GRID is an --out of mpq run of a CoNEXT'17
class; TOML the class's file, for the rates. Its "all" shares are those of
mpq plot --kind aggregation."""
import json, os, random, re, sys
grid, cls, toml = sys.argv[1:4]
lo, hi = (float(sys.argv[4]), float(sys.argv[5])) if len(sys.argv) > 5 else (1, 50)
txt = open(toml).read()
rates = {}
for m in re.finditer(r'name = "(s\d+[ab])"\n"path\.0\.rate" = "([\d.]+)Mbit"\n(?:.*\n){3}"path\.1\.rate" = "([\d.]+)Mbit"', txt):
    rates[m.group(1)] = (float(m.group(2)), float(m.group(3)))
names = [x for x in os.listdir(grid) if x in ('conext17-' + cls, 'conext17-mpquic-' + cls)]
if len(names) != 1:
    sys.exit(f'{grid}: want one of conext17-{cls} and conext17-mpquic-{cls}, found {names}')
d = names[0]
def t(e, mode):
    # the run's directory: its varied keys, --set ones first
    run = [x for x in os.listdir(os.path.join(grid, d)) if x == f'scenario={e},mode={mode}' or x.endswith(f',scenario={e},mode={mode}')]
    if len(run) != 1:
        sys.exit(f'{grid}/{d}: want one run of scenario {e}, mode {mode}, found {run}')
    s = json.load(open(os.path.join(grid, d, run[0], 'summary.json')))
    src = s['sources'][0]
    return src['response_ms']['max'] if src['completed'] == 1 else float('inf')
pairs = {}  # in-range entries by scenario pair: [(beat the best path, started on the worse path)]
n = above = nin = abovein = 0
wn = wabove = wnin = wabovein = 0
for e in sorted(rates):
    other = e[:-1] + ('b' if e[-1] == 'a' else 'a')
    best = min(t(e, 'single'), t(other, 'single'))
    win = t(e, 'multi') < best
    worse = t(e, 'single') > t(other, 'single')  # started on the worse path
    r = rates[e]
    inr = lo <= r[0] <= hi and lo <= r[1] <= hi
    n += 1; above += win; nin += inr; abovein += win and inr
    if inr:
        pairs.setdefault(e[:-1], []).append((win, worse))
    if worse:
        wn += 1; wabove += win; wnin += inr; wabovein += win and inr
pc = lambda a, b: f'{100*a/max(b,1):.1f} % of {b}'


def interval(worse_only):
    """The 95 % bootstrap interval of the in-range share."""
    keys = sorted(pairs)
    rng = random.Random(1)
    shares = []
    for _ in range(10000):
        es = [x for k in (rng.choice(keys) for _ in keys) for x in pairs[k] if x[1] or not worse_only]
        if es:
            shares.append(100 * sum(w for w, _ in es) / len(es))
    shares.sort()
    if not shares:
        return '[-]'
    return f'[{shares[int(0.025 * len(shares))]:.1f}, {shares[int(0.975 * len(shares)) - 1]:.1f}]'


print(f'{cls}: all {pc(above,n)}, {lo:g}-{hi:g} Mbit/s {pc(abovein,nin)} {interval(False)}; '
      f'worse path {pc(wabove,wn)}, {lo:g}-{hi:g} Mbit/s {pc(wabovein,wnin)} {interval(True)}')
