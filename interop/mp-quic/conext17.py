#!/usr/bin/env python3
"""MPQUIC itself on the CoNEXT'17 design, in mpq's namespace testbed.

MPQUIC (qdeconinck/mp-quic, branch conext17) is the implementation the
CoNEXT'17 paper and De Coninck's thesis measured. This script runs its
example server and client_benchmarker (built by build.sh) over the links of
a CoNEXT'17 class file, each scenario in a testbed of its own (`mpq testbed
up`, the userspace forwarder where the kernel has no netem), so that its
aggregation benefit can be set beside mpq's on the same entries.

  conext17.py sample CLASS_TOML SIM_DIR MAX_S N SEED OUT_TOML
      a seeded random sample of N scenario pairs of CLASS_TOML whose four
      downloads (single path and multipath, both path orders) took at most
      MAX_S seconds together in mpq's simulator run of the class in SIM_DIR
      (mpq run CLASS_TOML --repeat 1 --out ...; its runs.csv); writes the
      class file cut down to them (the same keys, `sample-` before its name)
  conext17.py pick CLASS_TOML OUT_TOML PAIR...
      the class file cut down to the named scenario pairs (s010 s019 ...)
  conext17.py run CLASS_TOML OUT_DIR [--slots K] [--mpq BIN] [--bin DIR]
      one single path and one multipath download of the class's file per
      scenario with MPQUIC (root; BIN is mpq, DIR holds build.sh's binaries
      and certificates); OUT_DIR/runs.csv has a row per download, OUT_DIR/
      logs the client's and server's output and the forwarder's statistics
  conext17.py eab [--response] RUNS_CSV...
      the aggregation benefit of the entries of each runs.csv: this
      script's, or mpq's (mpq run's runs.csv beside its run directories);
      --response: mpq's times from the request, as mpq plot takes them;
      RUNS_CSV may join several with commas, as one set (an entry in two
      of them counts once, from the first)
  conext17.py compare [--response] RUNS_A RUNS_B [RUNS_A RUNS_B ...]
      per pair of sets (as eab's), a row: the two on the entries both
      have: each one's share of entries above 0, the difference A - B
      with a 95 % bootstrap interval over scenario pairs (10,000
      resamples, seed 1), the entries above 0 in one set only, and the
      entries left out: those of one set only, and those without a
      benefit in either
  conext17.py ratios [--response] RUNS_A RUNS_B [RUNS_A RUNS_B ...]
      per pair of sets and mode (single, multi), a row: A's download time
      over B's on the entries both completed: the entries, and the median
      and the 10th and 90th percentiles of the ratios (nearest rank: the
      value of rank ceil(q * n) among the n sorted ratios); downloads
      that failed in either set are counted beside them, not in them

A set may be given a name for the tables, LABEL=RUNS_CSV (LABEL is then
what the table shows; an argument whose files all exist as written is a
path, even with an = in it). Each command prints one Markdown table.

Download time: from the client's start (before the handshake) to the last
byte, as MPQUIC's client_benchmarker prints it. Each download makes one
connection with a full handshake; the authors' scripts (minitopo) cached
the handshake with a first connection and timed a second with -c.
For mpq's runs `eab` takes the same span, messages.csv's replied_ms (the
connection starts at 0), not the response time that mpq plot's aggregation
uses (from the request, after the handshake).

The aggregation benefit is mpq plot's (`mpq help plot`, aggregation; the
thesis's equation 5.1): with G1, G2 the single path goodputs of an entry and
of its twin with the paths swapped, Gmax the larger and Gm the entry's
multipath goodput, (Gm - Gmax) / (G1 + G2 - Gmax) when Gm >= Gmax, else
(Gm - Gmax) / Gmax; -1 when the multipath download failed; no benefit when
a single path download failed.
"""
import csv
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time

FILE_BYTES = 20000 * 1024  # the design's 20000 KiB file
PORT = 6121


def scenarios(text):
    """The [[sweep.scenario]] tables of a class file: (name, [(key, value)])."""
    out = []
    for name, body in re.findall(r'\[\[sweep\.scenario\]\]\nname = "([^"]+)"\n(.*?)(?:\n\n|\n?$)', text, re.S):
        keys = []
        for line in body.splitlines():
            k, v = line.split(' = ', 1)
            keys.append((k.strip('"'), v.strip('"')))
        out.append((name, keys))
    return out


def sample(cls, sim_dir, max_s, n, seed, out):
    total = {}
    with open(os.path.join(sim_dir, 'runs.csv')) as f:
        for r in csv.DictReader(f):
            pair = r['scenario'][:-1]
            total[pair] = total.get(pair, 0.0) + float(r['download.response_p50_ms']) / 1000
    fit = sorted(p for p, t in total.items() if t <= max_s)
    pick = set(random.Random(seed).sample(fit, min(n, len(fit))))
    cut(cls, pick, out)
    print(f'{len(fit)} of {len(total)} scenario pairs within {max_s:g} s; sampled {len(pick)} '
          f'(seed {seed}): {" ".join(sorted(pick))}', file=sys.stderr)


def cut(cls, pairs, out):
    """Write the class file cls cut down to the scenario pairs (sNNN) in
    pairs, its name prefixed with "sample-"."""
    with open(cls) as f:
        text = f.read()
    first = text.index('[[sweep.scenario]]')
    blocks = re.findall(r'(\[\[sweep\.scenario\]\]\nname = "([^"]+)"\n.*?\n\n)', text, re.S)
    known = {name[:-1] for _, name in blocks}
    missing = sorted(set(pairs) - known)
    if missing:
        raise SystemExit(f'{cls}: no scenario pair {", ".join(missing)}')
    modes = text.index('[[sweep.mode]]')
    tail = text.rfind('\n\n', 0, modes) + 2  # the comment above the modes
    head = re.sub(r'^name = "', 'name = "sample-', text[:first], count=1, flags=re.M)
    kept = [b for b, name in blocks if name[:-1] in pairs]
    tmp = out + '.tmp'
    with open(tmp, 'w') as f:
        f.write(head + ''.join(kept) + text[tail:])
    os.replace(tmp, out)


def go_duration(s):
    """Seconds of a Go time.Duration string: 1m2.5s, 850.1ms, 1h0m3s."""
    if not re.fullmatch(r'([0-9.]+(h|m|s|ms|µs|us|ns))+', s):
        raise ValueError(f'not a Go duration: {s!r}')
    unit = {'h': 3600, 'm': 60, 's': 1, 'ms': 1e-3, 'µs': 1e-6, 'us': 1e-6, 'ns': 1e-9}
    return sum(float(v) * unit[u] for v, u in re.findall(r'([0-9.]+)(h|ms|µs|us|ns|m|s)', s))


def elapsed(lines):
    """The download time client_benchmarker logs last ("2017/... 12.3s")."""
    for line in reversed(lines):
        m = re.search(r'^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d (\S+)$', line)
        if m:
            try:
                return go_duration(m.group(1))
            except ValueError:
                return None
    return None


class Runner:
    def __init__(self, cls, out, slots, mpq, bindir):
        self.out, self.slots, self.mpq, self.bindir = out, slots, mpq, bindir
        self.jobs = list(enumerate(scenarios(open(cls).read())))
        self.rows, self.lock = [], threading.Lock()
        self.logs = os.path.join(out, 'logs')
        os.makedirs(self.logs, exist_ok=True)
        self.www = os.path.join(out, 'www')
        os.makedirs(self.www, exist_ok=True)
        self.file = os.path.join(self.www, 'file')
        if not os.path.exists(self.file) or os.path.getsize(self.file) != FILE_BYTES:
            with open(self.file, 'wb') as f:
                f.write(os.urandom(FILE_BYTES))
        self.base = os.path.join(out, 'testbed.toml')
        with open(self.base, 'w') as f:
            f.write('# the testbed of one scenario; conext17.py sets the paths\n'
                    'name = "mp-quic"\nduration = "30s"\n[[path]]\n[[path]]\n'
                    '[[source]]\nname = "unused"\nkind = "file"\nsize = "1KiB"\n')

    def sh(self, args, what):
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f'{what}: {" ".join(args)}: {r.stderr.strip()}')
        return r

    def job(self, slot, idx, name, keys):
        tag = f'mpquic{slot}'
        sets = [a for k, v in keys for a in ('--set', f'{k}={v}')]
        self.sh([self.mpq, 'testbed', 'up', self.base, '--name', tag] + sets, f'{name}: testbed up')
        try:
            self.download_both(slot, idx, name, tag)
        finally:
            subprocess.run([self.mpq, 'testbed', 'down', '--name', tag], capture_output=True)

    def download_both(self, slot, idx, name, tag):
        cl, sv = f'{tag}-client', f'{tag}-server'
        # MPQUIC opens its paths on the interfaces whose names hold "eth"
        # (pconn_manager.go); the testbed names the client's veths p0, p1.
        # Renaming takes a link down, which drops its neighbour entry and
        # routes: they are put back as the testbed had them.
        for i in (0, 1):
            link = self.sh(['ip', '-n', sv, '-o', 'link', 'show', f'p{i}'], f'{name}: server interface').stdout
            mac = re.search(r'link/ether (\S+)', link)
            if not mac:
                raise RuntimeError(f'{name}: no address of the server\'s p{i} in {link!r}')
            for cmd in (f'link set p{i} down', f'link set p{i} name eth{i}', f'link set eth{i} up',
                        f'neigh replace 10.{i}.0.2 lladdr {mac.group(1)} dev eth{i} nud permanent',
                        f'route replace default via 10.{i}.0.2 dev eth{i} table {100 + i}'):
                self.sh(['ip', '-n', cl] + cmd.split(), f'{name}: client interfaces')
        with open(os.path.join(self.logs, f'{name}-server.log'), 'w') as slog:
            srv = subprocess.Popen(['ip', 'netns', 'exec', sv, os.path.join(self.bindir, 'example'),
                                    '-bind', f'0.0.0.0:{PORT}', '-www', self.www, '-certpath', self.bindir],
                                   stdout=slog, stderr=subprocess.STDOUT)
            try:
                time.sleep(0.5)
                # alternate which mode goes first
                for mode in (('single', 'multi') if idx % 2 == 0 else ('multi', 'single')):
                    self.download(slot, name, mode, cl)
            finally:
                srv.terminate()
                try:
                    srv.wait(5)
                except subprocess.TimeoutExpired:
                    srv.kill()
        stats = f'/run/mpq/testbed/{tag}/emulator.json'
        if os.path.exists(stats):
            shutil.copyfile(stats, os.path.join(self.logs, f'{name}-emulator.json'))

    def download(self, slot, name, mode, cl):
        args = ['ip', 'netns', 'exec', cl, 'timeout', '3600', os.path.join(self.bindir, 'client_benchmarker')]
        if mode == 'multi':
            args.append('-m')
        args.append(f'https://10.0.0.2:{PORT}/file')
        t0 = time.monotonic()
        r = subprocess.run(args, capture_output=True, text=True)
        wall = time.monotonic() - t0
        lines = [l for l in (r.stdout + r.stderr).splitlines() if 'Queueing packet' not in l]
        with open(os.path.join(self.logs, f'{name}-{mode}.log'), 'w') as f:
            f.write('\n'.join(lines) + '\n')
        secs = elapsed(lines) if r.returncode == 0 else None
        paths = ';'.join(re.sub(r'^.*?(Path \d+: )', r'\1', l) for l in lines if re.search(r'Path \d+: sent', l))
        row = {'scenario': name, 'mode': mode, 'status': 'completed' if secs is not None else 'failed',
               'seconds': f'{secs:.6f}' if secs is not None else '', 'wall_s': f'{wall:.3f}',
               'exit': r.returncode, 'client_paths': paths}
        with self.lock:
            self.rows.append(row)
            print(f'[{slot}] {name} {mode}: {row["status"]} {row["seconds"]}', flush=True)

    def run(self):
        errors = []

        def worker(slot):
            while True:
                with self.lock:
                    if not self.jobs or errors:
                        return
                    idx, (name, keys) = self.jobs.pop(0)
                try:
                    self.job(slot, idx, name, keys)
                except RuntimeError as e:
                    with self.lock:
                        errors.append(str(e))

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(self.slots)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.rows.sort(key=lambda r: (r['scenario'], r['mode']))
        path = os.path.join(self.out, 'runs.csv')
        with open(path + '.tmp', 'w', newline='') as f:
            w = csv.DictWriter(f, fieldnames=['scenario', 'mode', 'status', 'seconds', 'wall_s', 'exit',
                                              'client_paths'])
            w.writeheader()
            w.writerows(self.rows)
        os.replace(path + '.tmp', path)
        if errors:
            raise SystemExit('conext17.py run: ' + '; '.join(errors))


def benefit(g1, g2, gm):
    """The aggregation benefit of multipath goodput gm (None: failed) over
    single path goodputs g1 and g2."""
    gm = gm or 0.0
    gmax = max(g1, g2)
    if gm >= gmax:
        return (gm - gmax) / (g1 + g2 - gmax)
    return (gm - gmax) / gmax


def times(path, response=False):
    """Download seconds per (scenario, mode) of a runs.csv: this script's
    (column seconds) or mpq run's (the run's messages.csv: replied_ms, from
    the connection's start; response_ms, from the request, if response)."""
    out = {}
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        key = (r['scenario'], r['mode'])
        if 'seconds' in r:
            out[key] = float(r['seconds']) if r['status'] == 'completed' and r['seconds'] else None
            continue
        msgs = os.path.join(os.path.dirname(path), r['dir'], 'messages.csv')
        with open(msgs) as m:
            done = [x for x in csv.DictReader(m) if x['source'] == 'download' and x['status'] == 'completed']
        out[key] = float(done[0]['response_ms' if response else 'replied_ms']) / 1000 if done else None
    return out


def labelled(arg):
    """(label, spec) of a set's argument: LABEL=SPEC when the argument
    is not, as written, a comma-separated list of existing files but the
    part after its first = is; else the argument is both."""
    def exists(spec):
        return all(os.path.isfile(p) for p in spec.split(','))
    if '=' in arg and not exists(arg):
        label, spec = arg.split('=', 1)
        if exists(spec):
            return label, spec
    return arg, arg


def merged(spec, response=False):
    """The times of the runs.csv files of spec, joined by commas; an entry
    in several counts once, from the first."""
    out, seen = {}, set()
    for path in spec.split(','):
        t = times(path, response)
        new = {s[:-1] for s, _ in t} - seen
        out.update({k: v for k, v in t.items() if k[0][:-1] in new})
        seen |= new
    return out


def entries(t):
    """(scenario, benefit or None, started on the better path) per entry;
    the twin of sNNNa is sNNNb."""
    out = []
    for (s, mode), _ in sorted(t.items()):
        if mode != 'multi':
            continue
        twin = s[:-1] + {'a': 'b', 'b': 'a'}[s[-1]]
        t1, t2, tm = t.get((s, 'single')), t.get((twin, 'single')), t.get((s, 'multi'))
        if not t1 or not t2:
            out.append((s, None, None))
            continue
        out.append((s, benefit(1 / t1, 1 / t2, 1 / tm if tm else None), t1 <= t2))
    return out


def summary(es):
    b = [e for e in es if e[1] is not None]

    def share(xs):
        return 100 * sum(1 for x in xs if x[1] > 0) / len(xs) if xs else float('nan')
    better = [e for e in b if e[2]]
    worse = [e for e in b if not e[2]]
    return len(es), len(es) - len(b), share(b), share(better), share(worse)


def compare(a, b, resamples=10000, seed=1):
    """Shares above 0 of times a and b on their common entries, the
    difference with its 95 % bootstrap interval over scenario pairs, and
    the entries above 0 in a only and in b only."""
    ea = {s: v for s, v, _ in entries(a)}
    eb = {s: v for s, v, _ in entries(b)}
    common = sorted(s for s in ea if s in eb and ea[s] is not None and eb[s] is not None)
    pairs = sorted({s[:-1] for s in common})
    by_pair = {p: [s for s in common if s[:-1] == p] for p in pairs}

    def shares(ps):
        xs = [s for p in ps for s in by_pair[p]]
        return (100 * sum(ea[s] > 0 for s in xs) / len(xs), 100 * sum(eb[s] > 0 for s in xs) / len(xs))
    sa, sb = shares(pairs)
    rng = random.Random(seed)
    diffs = sorted(x - y for x, y in (shares([rng.choice(pairs) for _ in pairs]) for _ in range(resamples)))
    lo, hi = diffs[int(0.025 * resamples)], diffs[int(0.975 * resamples) - 1]
    only_a = sum(1 for s in common if ea[s] > 0 >= eb[s])
    only_b = sum(1 for s in common if eb[s] > 0 >= ea[s])
    return len(common), len(pairs), sa, sb, sa - sb, lo, hi, only_a, only_b


def nearest_rank(xs, q):
    """The nearest-rank q-quantile of xs: the value of rank ceil(q * n)
    (at least 1) among the n sorted values."""
    v = sorted(xs)
    # ceil(q * n) in integers: 0.07 * 100 is 7.000000000000001 in floats.
    k = max(1, -(-int(round(q * 1000)) * len(v) // 1000))
    return v[k - 1]


def ratios(a, b):
    """Per mode, the entries both completed, the median, 10th and 90th
    percentiles of a's time over b's, and the entries failed in either."""
    out = {}
    for mode in ('single', 'multi'):
        keys = sorted(k for k in a if k[1] == mode and k in b)
        rs = [a[k] / b[k] for k in keys if a[k] and b[k]]
        failed = sum(1 for k in keys if not a[k] or not b[k])
        if rs:
            out[mode] = (len(rs), nearest_rank(rs, 0.5), nearest_rank(rs, 0.1), nearest_rank(rs, 0.9), failed)
        else:
            out[mode] = (0, None, None, None, failed)
    return out


def pairs_of(args):
    """(response, [(A, B), ...]) of compare's and ratios's arguments, or
    None when they are not [--response] and pairs."""
    response = args[:1] == ['--response']
    args = args[1:] if response else args
    if not args or len(args) % 2:
        return None
    return response, [(args[i], args[i + 1]) for i in range(0, len(args), 2)]


def print_compare(pairs, response):
    print('| A | B | entries (pairs) | A above 0 | B above 0 | A - B (95 % interval) | above 0 in A only | in B only '
          '| left out: in one set only, no benefit |')
    print('| --- | --- | --- | --- | --- | --- | --- | --- | --- |')
    for a, b in pairs:
        (la, a), (lb, b) = labelled(a), labelled(b)
        ta, tb = merged(a, response), merged(b, response)
        n, npairs, sa, sb, d, lo, hi, only_a, only_b = compare(ta, tb)
        # What the shares leave out: entries of one set that the other
        # lacks, and entries without a benefit (a single path download
        # that failed) in either.
        ea, eb = dict((s, v) for s, v, _ in entries(ta)), dict((s, v) for s, v, _ in entries(tb))
        unpaired = len(set(ea) ^ set(eb))
        nobenefit = sum(1 for s in set(ea) & set(eb) if ea[s] is None or eb[s] is None)
        print(f'| {la} | {lb} | {n} ({npairs}) | {sa:.1f} % | {sb:.1f} % | {d:+.1f} [{lo:+.1f}, {hi:+.1f}] | {only_a} '
              f'| {only_b} | {unpaired}, {nobenefit} |')


def print_ratios(pairs, response):
    print('| A | B | mode | entries | A over B, median (10th-90th percentile) | failed in either |')
    print('| --- | --- | --- | --- | --- | --- |')
    for a, b in pairs:
        (la, a), (lb, b) = labelled(a), labelled(b)
        for mode, (n, med, p10, p90, failed) in ratios(merged(a, response), merged(b, response)).items():
            cell = f'{med:.2f} ({p10:.2f}-{p90:.2f})' if n else '–'
            print(f'| {la} | {lb} | {mode} | {n} | {cell} | {failed} |')


def main(argv):
    if len(argv) >= 2 and argv[1] == 'sample' and len(argv) == 8:
        sample(argv[2], argv[3], float(argv[4]), int(argv[5]), int(argv[6]), argv[7])
    elif len(argv) >= 5 and argv[1] == 'pick':
        cut(argv[2], set(argv[4:]), argv[3])
    elif len(argv) >= 4 and argv[1] == 'run':
        opts = {'--slots': '2', '--mpq': 'mpq', '--bin': 'mp-quic-build'}
        rest = argv[4:]
        while rest:
            if rest[0] not in opts or len(rest) < 2:
                raise SystemExit(f'conext17.py run: unknown or incomplete option {rest[0]!r}')
            opts[rest[0]] = rest[1]
            rest = rest[2:]
        Runner(argv[2], argv[3], int(opts['--slots']), opts['--mpq'], os.path.abspath(opts['--bin'])).run()
    elif len(argv) >= 3 and argv[1] == 'eab':
        response = argv[2] == '--response'
        print('| runs | entries | failed | above 0 | started on the better path | on the worse path |')
        print('| --- | --- | --- | --- | --- | --- |')
        for arg in argv[3 if response else 2:]:
            label, p = labelled(arg)
            n, failed, a, b, w = summary(entries(merged(p, response)))
            print(f'| {label} | {n} | {failed} | {a:.1f} % | {b:.1f} % | {w:.1f} % |')
    elif argv[1:2] in (['compare'], ['ratios']) and pairs_of(argv[2:]) is not None:
        response, pairs = pairs_of(argv[2:])
        if argv[1] == 'compare':
            print_compare(pairs, response)
        else:
            print_ratios(pairs, response)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
