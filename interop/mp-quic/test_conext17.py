"""Unit tests of conext17.py on hand-computed values (run by peer_test.go)."""
import csv
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
