"""The numbers of issue 21's goal for mpq run output directories: per grid
point, the pooled p99 and p99.9 of source SOURCE's completion times (from
aggregate.json, with their 95 % order-statistic intervals), the messages
later than LIMIT ms (and how many of them were generated in the first 2 s),
and the mean over the runs of the application goodput (summary.json's
goodput_mbps.server.total) with half its 95 % Student-t interval.

With --ref REFDIR (one grid point, the same repetitions), also the mean
over the repetitions of the goodput's ratio to REFDIR's run of the same
repetition (paired: the same seeds), with half its 95 % Student-t interval.

usage: python3 experiments/analysis/goal.py [--source s1] [--limit 27.9] [--ref REFDIR] DIR...
"""
import csv, glob, json, math, os, sys

T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def main(argv):
    source, limit, ref, dirs = 's1', 27.9, None, []
    while argv:
        a = argv.pop(0)
        if a == '--source':
            source = argv.pop(0)
        elif a == '--ref':
            ref = [json.load(open(f))['goodput_mbps']['server']['total'] for f in sorted(glob.glob(os.path.join(argv.pop(0), '*', '*', 'rep*', 'summary.json')))]
        elif a == '--limit':
            limit = float(argv.pop(0))
        else:
            dirs.append(a)
    print('| run | messages | pooled p99 (ms) | pooled p99.9 (ms) | > %g ms (first 2 s) | goodput (Mbit/s) | ratio to ref |' % limit)
    print('|---|---|---|---|---|---|---|')
    for out in dirs:
        for agg in sorted(glob.glob(os.path.join(out, '*', 'aggregate.json'))):
            for p in json.load(open(agg))['points']:
                pooled = p['pooled'][source]
                runs = sorted(glob.glob(os.path.join(os.path.dirname(agg), p['dir'], 'rep*', 'summary.json')))
                if not runs:
                    runs = [os.path.join(os.path.dirname(agg), p['dir'], 'summary.json')]
                gs, late, early = [], 0, 0
                for s in runs:
                    gs.append(json.load(open(s))['goodput_mbps']['server']['total'])
                    for r in csv.DictReader(open(os.path.join(os.path.dirname(s), 'messages.csv'))):
                        if r['source'] == source and float(r['mct_ms']) > limit:
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
