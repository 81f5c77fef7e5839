"""Unit test of goal.py's --pool row on synthetic runs, its values worked
out by hand (see the comments).

    python3 -m unittest discover -s experiments/analysis -p 'test_*.py'
"""
import csv
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIELDS = ['source', 'created_ms', 'mct_ms', 'status']


def run_dir(root, name, rep, goodput, rows):
    d = os.path.join(root, name, 'exp', 'point', 'rep%d' % rep)
    os.makedirs(d)
    with open(os.path.join(d, 'summary.json'), 'w') as f:
        json.dump({'goodput_mbps': {'server': {'total': goodput}}}, f)
    with open(os.path.join(d, 'messages.csv'), 'w', newline='') as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow(dict(zip(FIELDS, r)))


class PoolTest(unittest.TestCase):
    def test_pool(self):
        with tempfile.TemporaryDirectory() as root:
            # A/rep0: MCTs 1..100 ms created at 0 (in the first 2 s);
            # A/rep1: 101..199 and one failed message; B/rep0: 200..299;
            # a message of another source is not counted.
            run_dir(root, 'A', 0, 10, [('s1', 0, v, 'completed') for v in range(1, 101)] + [('s2', 0, 500, 'completed')])
            run_dir(root, 'A', 1, 12, [('s1', 5000, v, 'completed') for v in range(101, 200)] + [('s1', 5000, '', 'failed')])
            run_dir(root, 'B', 0, 11, [('s1', 5000, v, 'completed') for v in range(200, 300)])
            # The reference runs, paired in order with A/rep0, A/rep1, B/rep0.
            run_dir(root, 'R', 0, 20, [])
            run_dir(root, 'R', 1, 20, [])
            run_dir(root, 'S', 0, 22, [])
            out = subprocess.run([sys.executable, os.path.join(HERE, 'goal.py'), '--pool', '--ref', 'R', '--ref', 'S', 'A', 'B'],
                                 cwd=root, capture_output=True, text=True, check=True).stdout
        row = out.strip().splitlines()[-1]
        # 300 messages sorted: 1..299 and +Inf (the failed one).
        # p99: rank ceil(0.99 x 300) = 297, the value 297; its interval's
        # lower rank is the largest l with P(B <= l-1) <= 0.025 for B
        # binomial(300, 0.99): 293; no upper rank (P(B >= 300) =
        # 0.99^300 = 0.049 > 0.025): +Inf.
        # p99.9: rank 300, +Inf; lower rank for binomial(300, 0.999): 298.
        # Late (> 27.9 ms): 28..299 and the failed one, 273; in the first
        # 2 s: 28..100 of A/rep0, 73.
        # Goodput 10, 12, 11: mean 11, standard deviation 1, half the 95 %
        # interval 4.303 x 1 / sqrt(3) = 2.484.
        # Ratios 10/20, 12/20, 11/22 = 0.5, 0.6, 0.5: mean 0.5333,
        # standard deviation 0.05774, half interval 4.303 x 0.05774 /
        # sqrt(3) = 0.1434.
        self.assertEqual(row, '| A + B (pooled, 3 runs) | 300 | 297.0 [293.0, inf] | inf [298.0, inf] | 273 (73) | 11.00 ± 2.48 | 0.533 ± 0.143 |')


if __name__ == '__main__':
    unittest.main()
