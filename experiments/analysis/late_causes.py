"""Why is a priority message later than the limit? Classifies every message
of source s1 with mct_ms > LIMIT in one run directory from its messages.csv
and the server's and client's qlog traces.

usage: python3 experiments/analysis/late_causes.py RUNDIR [LIMIT_MS]

RUNDIR is one run of mpq run with [output] qlog = true (its messages.csv
and qlog/*_server.sqlog, *_client.sqlog). Prints the count per cause; with
DEBUG=1 every late message and its packets on stderr. An analysis aid, not
part of mpq: its rules are heuristics (docs/results/beyond-the-paper.md, "Beyond the paper",
says what they can and cannot tell apart).

Per late message (first rule that holds):
  lost       the byte range that arrived last at the client came in a
             packet sent after an earlier packet with those bytes was lost
             (a retransmission) or its first copy was lost
  queue      it arrived in its first transmission, with a one-way delay
             above 25 ms + 1.5 ms (a standing queue at the link: slow start)
  flow-control it left more than 1.5 ms after its generation, at the
             moment a MAX_DATA frame arrived, after the server had sent
             DATA_BLOCKED in the 200 ms before: the connection's
             flow-control credit was used up (by background data)
  window     it left more than 1.5 ms after the message was generated:
             held back (no room in the window / scheduler held it);
             "window-after-loss" when a loss was declared on the server in
             the 100 ms before the message's generation, else "window-full"
  other      none of these
A message never delivered (mct_ms +Inf) is "not-delivered", whatever else
held it back.

usage: python3 experiments/analysis/late_causes.py --table [--mct] [--limit MS] [-o FILE] late-SCHED.log...

tabulates the logs that experiments/analysis/late_causes.sh writes (the
per-message lines on stderr of the classification above, one log per
scheduler, named late-SCHED.log) as a Markdown table, a row per log: the
late messages per cause ("N (M)": M of the N generated in the first two
seconds), or with --mct their MCT per cause (median and largest, ms).
A "not delivered" column follows when a log has such a message (its MCT
is inf).
Every line counts: a line the tabulation cannot read is an error, not a
skip. With -o the table goes to FILE (written under a temporary name and
renamed), else to stdout.
"""
import csv, json, sys, os, glob, bisect, collections, math, re, statistics

# The causes in the tables' order, and their column names.
CAUSES = [('queue', 'queue'), ('flow-control', 'flow control'), ('window-after-loss', 'held back after a loss'),
          ('window-full', 'held back, window full'), ('lost', 'lost'), ('other', 'other')]
# A message never delivered: a column of its own, shown when a log has one.
UNDELIVERED = ('not-delivered', 'not delivered')
LOG_LINE = re.compile(r'^\S+ seq=\d+ created=[\d.]+ mct=([\d.]+|inf) cause=([a-z-]+)( \(<2s\))?$')


def tabulate(logs, limit, mct):
    """The table of the logs (counts, or with mct the MCTs), as Markdown text."""
    rows = []  # (scheduler, cause -> [(mct, early)])
    for path in logs:
        name = os.path.basename(path)
        if not (name.startswith('late-') and name.endswith('.log')):
            sys.exit('%s: not a late-SCHED.log' % path)
        sched = name[len('late-'):-len('.log')]
        by = {c: [] for c, _ in CAUSES + [UNDELIVERED]}  # cause -> [(mct, early)]
        for i, line in enumerate(open(path), 1):
            m = LOG_LINE.match(line.rstrip('\n'))
            if not m or m.group(2) not in by:
                sys.exit('%s:%d: not a late message line: %r' % (path, i, line.rstrip('\n')))
            by[m.group(2)].append((float(m.group(1)), m.group(3) is not None))
        rows.append((sched, by))
    causes = CAUSES + [UNDELIVERED] if any(by[UNDELIVERED[0]] for _, by in rows) else CAUSES

    def cell(v, total=False):
        if not v:
            return '0'
        early = sum(e for _, e in v)
        return '%d (%d in the first 2 s)' % (len(v), early) if total else '%d (%d)' % (len(v), early)

    def ms(x):
        return 'inf' if math.isinf(x) else '%.1f' % x

    if mct:
        out = ['| scheduler | %s |' % ' | '.join(n for _, n in causes), '|---|' + '---|' * len(causes)]
    else:
        out = ['| scheduler | late (> %g ms) | %s |' % (limit, ' | '.join(n for _, n in causes)),
               '|---|---|' + '---|' * len(causes)]
    for sched, by in rows:
        if mct:
            out.append('| `%s` | %s |' % (sched, ' | '.join(
                '%s (%s)' % (ms(statistics.median(t for t, _ in by[c])), ms(max(t for t, _ in by[c]))) if by[c] else '–'
                for c, _ in causes)))
        else:
            every = [x for c, _ in causes for x in by[c]]
            out.append('| `%s` | %s | %s |' % (sched, cell(every, True), ' | '.join(cell(by[c]) for c, _ in causes)))
    return '\n'.join(out) + '\n'


if len(sys.argv) > 1 and sys.argv[1] == '--table':
    args, limit, out, mct = sys.argv[2:], 27.9, None, False
    while args and args[0] in ('--limit', '-o', '--mct'):
        if args[0] == '--mct':
            mct, args = True, args[1:]
            continue
        if len(args) < 2:
            sys.exit('%s needs a value' % args[0])
        if args[0] == '--limit':
            limit = float(args[1])
        else:
            out = args[1]
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    text = tabulate(args, limit, mct)
    if out is None:
        sys.stdout.write(text)
    else:
        tmp = out + '.tmp'
        with open(tmp, 'w') as f:
            f.write(text)
        os.replace(tmp, out)
    sys.exit()

run = sys.argv[1]
limit = float(sys.argv[2]) if len(sys.argv) > 2 else 27.9
msgs = list(csv.DictReader(open(os.path.join(run, 'messages.csv'))))
# message byte ranges: consecutive on a stream, by seq
off = collections.defaultdict(int)
ranges = {}
for m in sorted((m for m in msgs if m['source'] == 's1'), key=lambda m: int(m['seq'])):
    sid = int(m['stream_id']); n = int(m['length'])
    ranges[int(m['seq'])] = (sid, off[sid], off[sid] + n)
    off[sid] += n
late = [m for m in msgs if m['source'] == 's1' and float(m['mct_ms']) > limit]
if not late:
    print(run, 'late 0'); sys.exit()
want = collections.defaultdict(list)  # stream -> [(seq,start,end)]
for m in late:
    sid, a, b = ranges[int(m['seq'])]
    want[sid].append((int(m['seq']), a, b))
srv = glob.glob(os.path.join(run, 'qlog', '*_server.sqlog'))[0]
cli = glob.glob(os.path.join(run, 'qlog', '*_client.sqlog'))[0]
sent = collections.defaultdict(list)  # seq -> [(time, path, pn, a, b)]
losses = []  # times of packet_lost on the server
lostpk = set()
blocked = []  # times the server sent DATA_BLOCKED
maxdata = []  # times the server received MAX_DATA
for line in open(srv):
    if '"data_blocked"' in line and '"quic:packet_sent"' in line and '"stream_data_blocked"' not in line:
        blocked.append(json.loads(line.lstrip("\x1e"))['time']); continue
    if '"max_data"' in line and '"quic:packet_received"' in line:
        maxdata.append(json.loads(line.lstrip("\x1e"))['time']); continue
    if '"quic:packet_lost"' in line:
        e = json.loads(line.lstrip("\x1e")); losses.append(e['time'])
        lostpk.add((e['data'].get('path_id', 0), e['data']['header']['packet_number']))
        continue
    if '"quic:packet_sent"' not in line or '"stream"' not in line:
        continue
    e = json.loads(line.lstrip("\x1e"))
    d = e['data']
    for f in d.get('frames', []):
        if f.get('frame_type') != 'stream' or f['stream_id'] not in want:
            continue
        fa = f.get('offset', 0); fb = fa + f['raw']['length'] if 'raw' in f else fa + f.get('length', 0)
        for seq, a, b in want[f['stream_id']]:
            if fa < b and fb > a:
                sent[seq].append((e['time'], d.get('path_id', 0), d['header']['packet_number'], max(fa, a), min(fb, b)))
need = {(p, pn) for v in sent.values() for (_, p, pn, _, _) in v}
recv = {}
for line in open(cli):
    if '"quic:packet_received"' not in line or '"1RTT"' not in line:
        continue
    e = json.loads(line.lstrip("\x1e")); d = e['data']
    k = (d.get('path_id', 0), d['header']['packet_number'])
    if k in need and k not in recv:
        recv[k] = e['time']
losses.sort()
count = collections.Counter()
for m in late:
    seq = int(m['seq']); created = float(m['created_ms']); mct = float(m['mct_ms'])
    pk = sorted(sent[seq])
    # earliest arrival per byte: walk byte boundaries
    pts = sorted({x for (_, _, _, a, b) in pk for x in (a, b)})
    worst = None  # (arrival, packet)
    for lo, hi in zip(pts, pts[1:]):
        cov = [x for x in pk if x[3] <= lo and x[4] >= hi]
        arr = [(recv[(x[1], x[2])], x) for x in cov if (x[1], x[2]) in recv]
        if not arr:
            continue
        best = min(arr)
        if worst is None or best[0] > worst[0]:
            worst = best
    if math.isinf(mct):
        cause = 'not-delivered'
    elif worst is None:
        cause = 'other'
    else:
        t, (ts, p, pn, a, b) = worst
        earlier = [x for x in pk if x[0] < ts and x[3] < b and x[4] > a]
        first_lost = any((x[1], x[2]) in lostpk for x in pk if x[3] < b and x[4] > a)
        if earlier and first_lost:
            cause = 'lost'
        elif t - ts > 26.5:
            cause = 'queue'
        elif ts - created > 1.5 and any(created - 200 <= b <= ts for b in blocked) and any(abs(ts - x) < 0.01 for x in maxdata):
            cause = 'flow-control'
        elif ts - created > 1.5:
            i = bisect.bisect_left(losses, created - 100)
            cause = 'window-after-loss' if i < len(losses) and losses[i] <= ts else 'window-full'
        else:
            cause = 'other'
    if created < 2000: cause += ' (<2s)'
    count[cause] += 1
    if os.environ.get('DEBUG'):
        for x in pk: print('   ', x, recv.get((x[1],x[2])), file=sys.stderr)
    print('%s seq=%d created=%.1f mct=%s cause=%s' % (os.path.basename(run.rstrip('/')), seq, created,
                                                      'inf' if math.isinf(mct) else '%.1f' % mct, cause), file=sys.stderr)
print(run, 'late', len(late), dict(count))
