"""Unit tests of conext17.py on hand-computed values (run by peer_test.go)."""
import contextlib
import csv
import io
import os
import tempfile
import unittest

import conext17


class TestBenefit(unittest.TestCase):
    def test_benefit(self):
        # Gm beyond the better path: (Gm - Gmax) / (G1 + G2 - Gmax).
        self.assertAlmostEqual(conext17.benefit(10, 5, 12), (12 - 10) / 5)
        self.assertAlmostEqual(conext17.benefit(5, 10, 15), 1.0)
        self.assertEqual(conext17.benefit(10, 5, 10), 0.0)
        # Short of it: (Gm - Gmax) / Gmax.
        self.assertAlmostEqual(conext17.benefit(10, 5, 8), -0.2)
        # A failed multipath download is -1.
        self.assertEqual(conext17.benefit(10, 5, None), -1.0)

    def test_entries(self):
        # s001: 4 s single on a (5 MB/s of a 20 MB file), 10 s on b, multipath
        # 2.5 s started on a and 5 s on b; s002 failed single path on b.
        t = {('s001a', 'single'): 4.0, ('s001b', 'single'): 10.0,
             ('s001a', 'multi'): 2.5, ('s001b', 'multi'): 5.0,
             ('s002a', 'single'): 3.0, ('s002b', 'single'): None,
             ('s002a', 'multi'): 2.0, ('s002b', 'multi'): None}
        got = {s: (round(b, 6) if b is not None else None, better) for s, b, better in conext17.entries(t)}
        # G1 = 1/4, G2 = 1/10, Gm = 1/2.5 = 0.4: (0.4 - 0.25) / 0.1 = 1.5;
        # on b: Gm = 0.2 < 0.25: (0.2 - 0.25) / 0.25 = -0.2.
        self.assertEqual(got, {'s001a': (1.5, True), 's001b': (-0.2, False),
                               's002a': (None, None), 's002b': (None, None)})
        n, failed, above, better, worse = conext17.summary(conext17.entries(t))
        self.assertEqual((n, failed, above, better, worse), (4, 2, 50.0, 100.0, 0.0))


class TestCompare(unittest.TestCase):
    @staticmethod
    def times(multi):
        # Single path 4 s on a, 10 s on b: the better path's goodput is
        # 1/4, so a multipath time under 4 s is above 0, over 4 s below.
        t = {}
        for pair, (ta, tb) in multi.items():
            t.update({(pair + 'a', 'single'): 4.0, (pair + 'b', 'single'): 10.0,
                      (pair + 'a', 'multi'): ta, (pair + 'b', 'multi'): tb})
        return t

    def test_compare(self):
        a = self.times({'s001': (3, 3), 's002': (5, 3)})  # +, +, -, +
        b = self.times({'s001': (3, 5), 's002': (5, 5)})  # +, -, -, -
        # 75 % against 25 %; every resample of the two pairs differs by 50
        # points (pair 1 alone: 100 - 50, pair 2 alone: 50 - 0).
        self.assertEqual(conext17.compare(a, b, resamples=200), (4, 2, 75.0, 25.0, 50.0, 50.0, 50.0, 2, 0))
        # Entries the other set lacks are left out.
        b.pop(('s002b', 'multi'))
        n, pairs = conext17.compare(a, b, resamples=10)[:2]
        self.assertEqual((n, pairs), (3, 2))
        del b[('s002a', 'single')]  # s002a and s002b have no benefit then
        self.assertEqual(conext17.compare(a, b, resamples=10)[:4], (2, 1, 100.0, 50.0))

    def test_ratios(self):
        # Ten single path entries whose A/B ratios are 1.0, 1.1, ..., 1.9
        # (A = 10 + i s, B = 10 s), one multipath entry, and one entry
        # that failed in B.
        a = {('s%03da' % i, 'single'): 10.0 + i for i in range(10)}
        b = {('s%03da' % i, 'single'): 10.0 for i in range(10)}
        a[('s100a', 'multi')], b[('s100a', 'multi')] = 3.0, 2.0
        a[('s101a', 'multi')], b[('s101a', 'multi')] = 3.0, None
        got = conext17.ratios(a, b)
        # Nearest rank of 10: the median is rank 5 (1.4), the 10th
        # percentile rank 1 (1.0), the 90th rank 9 (1.8).
        n, med, p10, p90, failed = got['single']
        self.assertEqual((n, failed), (10, 0))
        self.assertAlmostEqual(med, 1.4)
        self.assertAlmostEqual(p10, 1.0)
        self.assertAlmostEqual(p90, 1.8)
        # One completed multipath entry (1.5) and one failed beside it.
        self.assertEqual(got['multi'], (1, 1.5, 1.5, 1.5, 1))
        # Nearest rank of 3 values: the 10th percentile is the first, the
        # median and the 90th the second and the third.
        self.assertEqual([conext17.nearest_rank([3, 1, 2], q) for q in (0.1, 0.5, 0.9)], [1, 2, 3])

    def test_merged_and_cut(self):
        with tempfile.TemporaryDirectory() as d:
            for name, rows in [('x.csv', [('s001a', 'single', '4'), ('s001a', 'multi', '3')]),
                               ('y.csv', [('s001a', 'single', '9'), ('s002a', 'single', '5')])]:
                with open(os.path.join(d, name), 'w', newline='') as f:
                    w = csv.writer(f)
                    w.writerow(['scenario', 'mode', 'status', 'seconds'])
                    for s, m, sec in rows:
                        w.writerow([s, m, 'completed', sec])
            # s001 from x.csv only (its pair is there); s002 from y.csv.
            self.assertEqual(conext17.merged(os.path.join(d, 'x.csv') + ',' + os.path.join(d, 'y.csv')),
                             {('s001a', 'single'): 4.0, ('s001a', 'multi'): 3.0, ('s002a', 'single'): 5.0})
            cls = os.path.join(d, 'c.toml')
            with open(cls, 'w') as f:
                f.write('name = "c"\nrepeat = 3\n\n[[sweep.scenario]]\nname = "s001a"\n"path.0.rate" = "5Mbit"\n\n'
                        '[[sweep.scenario]]\nname = "s001b"\n"path.0.rate" = "1Mbit"\n\n'
                        '[[sweep.scenario]]\nname = "s002a"\n"path.0.rate" = "2Mbit"\n\n'
                        '# the modes\n[[sweep.mode]]\nname = "single"\n')
            out = os.path.join(d, 'o.toml')
            conext17.cut(cls, {'s001'}, out)
            with open(out) as f:
                got = f.read()
            self.assertEqual(got, 'name = "sample-c"\nrepeat = 3\n\n[[sweep.scenario]]\nname = "s001a"\n'
                             '"path.0.rate" = "5Mbit"\n\n[[sweep.scenario]]\nname = "s001b"\n"path.0.rate" = "1Mbit"\n\n'
                             '# the modes\n[[sweep.mode]]\nname = "single"\n')
            with self.assertRaises(SystemExit):
                conext17.cut(cls, {'s009'}, out)


class TestTables(unittest.TestCase):
    @staticmethod
    def write(d, name, rows):
        path = os.path.join(d, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', newline='') as f:
            w = csv.writer(f)
            w.writerow(['scenario', 'mode', 'status', 'seconds'])
            for r in rows:
                w.writerow(r)
        return path

    def test_labelled(self):
        with tempfile.TemporaryDirectory() as d:
            x = self.write(d, 'x.csv', [])
            odd = self.write(d, 'p=1/runs.csv', [])
            self.assertEqual(conext17.labelled('MPQUIC low=' + x), ('MPQUIC low', x))
            self.assertEqual(conext17.labelled('both=' + x + ',' + x), ('both', x + ',' + x))
            # A path with an = that exists as written is a path.
            self.assertEqual(conext17.labelled(odd), (odd, odd))
            # Neither the argument nor its tail exists: left as it is
            # (merged then fails on it).
            self.assertEqual(conext17.labelled('a=b.csv'), ('a=b.csv', 'a=b.csv'))

    def test_pairs_in_one_table(self):
        # Two pairs of sets, A's times twice B's in the first and equal
        # in the second: one table, a row per pair and mode, with the
        # labels given.
        with tempfile.TemporaryDirectory() as d:
            rows = [('s001a', 'single', 'completed', '4'), ('s001b', 'single', 'completed', '10'),
                    ('s001a', 'multi', 'completed', '3'), ('s001b', 'multi', 'completed', '3')]
            a = self.write(d, 'a.csv', rows)
            b = self.write(d, 'b.csv', [(s, m, st, str(float(x) / 2)) for s, m, st, x in rows])
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(conext17.main(['conext17.py', 'ratios', 'A1=' + a, 'B1=' + b, 'A2=' + a, a]), 0)
            lines = out.getvalue().splitlines()
            self.assertEqual(lines[2:], [
                '| A1 | B1 | single | 2 | 2.00 (2.00-2.00) | 0 |',
                '| A1 | B1 | multi | 2 | 2.00 (2.00-2.00) | 0 |',
                f'| A2 | {a} | single | 2 | 1.00 (1.00-1.00) | 0 |',
                f'| A2 | {a} | multi | 2 | 1.00 (1.00-1.00) | 0 |'])
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(conext17.main(['conext17.py', 'compare', 'A=' + a, 'B=' + b, 'A=' + a, 'A again=' + a]), 0)
            # Both entries above 0 in each set (3 s against a better path
            # of 4 s; halved: 1.5 against 2).
            self.assertEqual(out.getvalue().splitlines()[2:], [
                '| A | B | 2 (1) | 100.0 % | 100.0 % | +0.0 [+0.0, +0.0] | 0 | 0 | 0, 0 |',
                '| A | A again | 2 (1) | 100.0 % | 100.0 % | +0.0 [+0.0, +0.0] | 0 | 0 | 0, 0 |'])
            # An odd number of sets is a usage error.
            with contextlib.redirect_stderr(io.StringIO()):
                self.assertEqual(conext17.main(['conext17.py', 'ratios', a, b, a]), 2)


class TestParse(unittest.TestCase):
    def test_go_duration(self):
        for s, want in [('1.052497824s', 1.052497824), ('850.5ms', 0.8505), ('1m2.5s', 62.5),
                        ('1h0m3s', 3603.0), ('12µs', 12e-6)]:
            self.assertAlmostEqual(conext17.go_duration(s), want)
        with self.assertRaises(ValueError):
            conext17.go_duration('12 s')

    def test_elapsed(self):
        lines = ['2026/11/29 16:34:37 Path 1: sent 570 retrans 2 lost 0; rcv 1053',
                 '2026/11/29 16:34:37 1m1.052497824s']
        self.assertAlmostEqual(conext17.elapsed(lines), 61.052497824)
        self.assertIsNone(conext17.elapsed(['panic: no route to host']))

    def test_scenarios(self):
        text = ('name = "x"\n\n[[sweep.scenario]]\nname = "s001a"\n"path.0.rate" = "5Mbit"\n'
                '"path.0.queue" = 15000\n\n[[sweep.scenario]]\nname = "s001b"\n"path.0.rate" = "1Mbit"\n\n'
                '[[sweep.mode]]\nname = "single"\n')
        self.assertEqual(conext17.scenarios(text), [
            ('s001a', [('path.0.rate', '5Mbit'), ('path.0.queue', '15000')]),
            ('s001b', [('path.0.rate', '1Mbit')])])

    def test_times_of_mpq_runs(self):
        # mpq run's runs.csv names each run's directory; its messages.csv
        # has the download's replied_ms (from the connection's start) and
        # response_ms (from the request).
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, 'runs.csv'), 'w', newline='') as f:
                w = csv.writer(f)
                w.writerow(['point', 'dir', 'scenario', 'mode'])
                w.writerow([0, 'scenario=s001a,mode=single', 's001a', 'single'])
                w.writerow([1, 'scenario=s001a,mode=multi', 's001a', 'multi'])
            for run, status, replied, response in [('scenario=s001a,mode=single', 'completed', '4021.5', '4000.0'),
                                                   ('scenario=s001a,mode=multi', 'failed', '', '')]:
                os.mkdir(os.path.join(d, run))
                with open(os.path.join(d, run, 'messages.csv'), 'w', newline='') as f:
                    w = csv.writer(f)
                    w.writerow(['source', 'status', 'replied_ms', 'response_ms'])
                    w.writerow(['download', status, replied, response])
            self.assertEqual(conext17.times(os.path.join(d, 'runs.csv')),
                             {('s001a', 'single'): 4.0215, ('s001a', 'multi'): None})
            self.assertEqual(conext17.times(os.path.join(d, 'runs.csv'), response=True)[('s001a', 'single')], 4.0)


if __name__ == '__main__':
    unittest.main()
