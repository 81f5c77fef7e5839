"""The numbers of issue 21's goal for mpq run output directories: per grid
point, the pooled p99 and p99.9 of source SOURCE's completion times (from
aggregate.json, with their 95 % order-statistic intervals), the messages
later than LIMIT ms (and how many of them were generated in the first 2 s),
and the mean over the runs of the application goodput (summary.json's
goodput_mbps.server.total) with half its 95 % Student-t interval.

With --ref REFDIR (one grid point, the same repetitions), also the mean
over the repetitions of the goodput's ratio to REFDIR's run of the same
repetition (paired: the same seeds), with half its 95 % Student-t interval.
--ref may be given several times: the runs of the REFDIRs, in that order.

With --pool, the DIRs (each one grid point, for example the same
configuration run with different base seeds) make one row: their runs'
messages pooled (a message that did not complete counts as +Inf, none is
dropped), the quantiles computed here as mpq does (nearest rank, the
95 % order-statistic interval of trafficgen.QuantileCI), and the ratio
paired run by run with the --ref runs in the same order.

usage: python3 experiments/analysis/goal.py [--source s1] [--limit 27.9] [--ref REFDIR]... [--pool] DIR...
"""
import csv, glob, json, math, os, sys

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def mct(row):
    """A message's completion time in ms, +Inf unless it completed."""
    if row['status'] != 'completed':
        return math.inf
    return float(row['mct_ms'])


def nearest_rank(sorted_values, p):
    """mpq's quantile: the value at rank ceil(p n), at least rank 1."""
    n = len(sorted_values)
    return sorted_values[max(1, math.ceil(p * n - 1e-9)) - 1]


def quantile_ci(sorted_values, p, conf=0.95):
    """trafficgen.QuantileCI: the order statistics l and u around the
    p-quantile with P(B <= l-1) <= alpha and P(B >= u) <= alpha, B
    binomial(n, p), alpha = (1-conf)/2; NaN and +Inf where none exists."""
    n = len(sorted_values)
    alpha = (1 - conf) / 2
    lgn = math.lgamma(n + 1)
    pmf = lambda k: math.exp(lgn - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p))
    lo_rank, below = 0, 0.0
    for l in range(1, n + 1):
        below += pmf(l - 1)
        if below > alpha:
            break
        lo_rank = l
    hi_rank, above = 0, 0.0
    for u in range(n, 0, -1):
        above += pmf(u)
        if above > alpha:
            break
        hi_rank = u
    lo = sorted_values[lo_rank - 1] if lo_rank else math.nan
    hi = sorted_values[hi_rank - 1] if hi_rank else math.inf
    return lo, hi


def runs_of(out):
    """The summary.json files of the runs under an mpq run output directory."""
    return sorted(glob.glob(os.path.join(out, '*', '*', 'rep*', 'summary.json')))


def pooled_row(dirs, source, limit, ref):
    """The --pool row: every run of dirs, their messages of source pooled."""
    gs, mcts, late, early = [], [], 0, 0
    for out in dirs:
        for s in runs_of(out):
            gs.append(json.load(open(s))['goodput_mbps']['server']['total'])
            for r in csv.DictReader(open(os.path.join(os.path.dirname(s), 'messages.csv'))):
                if r['source'] != source:
                    continue
                m = mct(r)
                mcts.append(m)
                if m > limit:
                    late += 1
                    early += float(r['created_ms']) < 2000
    mcts.sort()
    n = len(gs)
    mean = sum(gs) / n
    half = T95.get(n - 1, 1.96) * math.sqrt(sum((g - mean) ** 2 for g in gs) / (n - 1) / n) if n > 1 else math.nan
    ratio = ''
    if ref and len(ref) == n:
        r = [a / b for a, b in zip(gs, ref)]
        rm = sum(r) / n
        ratio = '%.3f ± %.3f' % (rm, T95.get(n - 1, 1.96) * math.sqrt(sum((x - rm) ** 2 for x in r) / (n - 1) / n))
    q = lambda p: '%.1f [%.1f, %.1f]' % ((nearest_rank(mcts, p),) + quantile_ci(mcts, p))
    return '| %s (pooled, %d runs) | %d | %s | %s | %d (%d) | %.2f ± %.2f | %s |' % (
        ' + '.join(dirs), n, len(mcts), q(0.99), q(0.999), late, early, mean, half, ratio)


def main(argv):
    source, limit, ref, dirs, pool = 's1', 27.9, None, [], False
    while argv:
        a = argv.pop(0)
        if a == '--source':
            source = argv.pop(0)
        elif a == '--ref':
            ref = (ref or []) + [json.load(open(f))['goodput_mbps']['server']['total'] for f in runs_of(argv.pop(0))]
        elif a == '--limit':
            limit = float(argv.pop(0))
        elif a == '--pool':
            pool = True
        else:
            dirs.append(a)
    if pool:
        print('| run | messages | pooled p99 (ms) | pooled p99.9 (ms) | > %g ms (first 2 s) | goodput (Mbit/s) | ratio to ref |' % limit)
        print('|---|---|---|---|---|---|---|')
        print(pooled_row(dirs, source, limit, ref))
        return
    print('| run | messages | pooled p99 (ms) | pooled p99.9 (ms) | > %g ms (first 2 s) | goodput (Mbit/s) | ratio to ref |' % limit)
    print('|---|---|---|---|---|---|---|')
    for out in dirs:
        for agg in sorted(glob.glob(os.path.join(out, '*', 'aggregate.json'))):
            for p in json.load(open(agg))['points']:
                if source not in p['pooled']:
                    continue  # a sweep without this source
                pooled = p['pooled'][source]
                runs = sorted(glob.glob(os.path.join(os.path.dirname(agg), p['dir'], 'rep*', 'summary.json')))
                if not runs:
                    runs = [os.path.join(os.path.dirname(agg), p['dir'], 'summary.json')]
                gs, late, early = [], 0, 0
                for s in runs:
                    gs.append(json.load(open(s))['goodput_mbps']['server']['total'])
                    for r in csv.DictReader(open(os.path.join(os.path.dirname(s), 'messages.csv'))):
                        if r['source'] == source and mct(r) > limit:
                            late += 1
                            early += float(r['created_ms']) < 2000
                n = len(gs)
                mean = sum(gs) / n
                half = T95.get(n - 1, 1.96) * math.sqrt(sum((g - mean) ** 2 for g in gs) / (n - 1) / n) if n > 1 else float('nan')
                ratio = ''
                if ref and len(ref) == n:
                    r = [a / b for a, b in zip(gs, ref)]
                    rm = sum(r) / n
                    ratio = '%.3f ± %.3f' % (rm, T95.get(n - 1, 1.96) * math.sqrt(sum((x - rm) ** 2 for x in r) / (n - 1) / n))
                q = lambda k: '%.1f [%.1f, %.1f]' % (pooled[k], *pooled[k + '_ci95'])
                print('| %s %s | %d | %s | %s | %d (%d) | %.2f ± %.2f | %s |' % (out, ','.join(p['vary']), pooled['n'], q('p99'), q('p999'), late, early, mean, half, ratio))


main(sys.argv[1:])
