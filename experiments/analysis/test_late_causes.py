"""Unit test of late_causes.py on a synthetic run: one late message of each
class, the classes derived by hand from the script's rules (see the
comments), and one message in time that is not counted.

    python3 -m unittest discover -s experiments/analysis -p 'test_*.py'
"""
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))

FIELDS = ['source', 'kind', 'seq', 'priority', 'reply_priority', 'length', 'reply', 'created_ms', 'started_ms',
          'written_ms', 'delivered_ms', 'replied_ms', 'mct_ms', 'response_ms', 'stream_id', 'queued', 'status',
          'failed', 'warmup', 'late_ms']


def sent(t, path, pn, frames):
    return {'time': t, 'name': 'quic:packet_sent',
            'data': {'path_id': path, 'header': {'packet_type': '1RTT', 'packet_number': pn}, 'frames': frames}}


def received(t, path, pn, frames):
    return {'time': t, 'name': 'quic:packet_received',
            'data': {'path_id': path, 'header': {'packet_type': '1RTT', 'packet_number': pn}, 'frames': frames}}


def lost(t, path, pn):
    return {'time': t, 'name': 'quic:packet_lost', 'data': {'path_id': path, 'header': {'packet_number': pn}}}


def stream(sid, off, n):
    return [{'frame_type': 'stream', 'stream_id': sid, 'offset': off, 'length': n}]


# seq: (stream, created, mct, expected cause). Every message is 100 bytes
# alone on its stream.
MESSAGES = {
    # Sent at 3000 as (0,10), declared lost at 3060, resent as (0,20)
    # which arrived last (3080): an earlier packet with its bytes was lost.
    0: (1, 3000.0, 80.0, 'lost'),
    # Left at once, arrived 30 ms later (> 26.5 ms): a queue.
    1: (5, 4000.0, 30.0, 'queue'),
    # Left 10 ms after its generation (> 1.5 ms), at 5010, within 0.01 ms
    # of a MAX_DATA the server received (5009.995), the server having sent
    # DATA_BLOCKED at 4900 (within the 200 ms before); arrived after 25 ms.
    2: (9, 5000.0, 35.0, 'flow-control'),
    # Left 5 ms after its generation, a loss declared at 5950 (within the
    # 100 ms before the generation, 6000); arrived after 25 ms.
    3: (13, 6000.0, 30.0, 'window-after-loss'),
    # Left 5 ms after its generation, no loss since 7900: window full.
    4: (17, 8000.0, 30.0, 'window-full'),
    # Left 0.5 ms after its generation, arrived after 24.5 ms: none holds.
    5: (21, 9000.0, 28.5, 'other'),
    # Like seq 1, generated in the first two seconds.
    6: (25, 1000.0, 30.0, 'queue (<2s)'),
    # In time (25 ms <= 27.9 ms): not counted.
    7: (29, 10000.0, 25.0, None),
    # Never delivered (messages.csv's +Inf): sent at once, its packet
    # lost and never resent; counted as late, whatever held it.
    8: (33, 11000.0, '+Inf', 'not-delivered'),
}

SERVER = [
    sent(3000.0, 0, 10, stream(1, 0, 100)),
    lost(3060.0, 0, 10),
    sent(3060.0, 0, 20, stream(1, 0, 100)),
    sent(4000.0, 0, 11, stream(5, 0, 100)),
    sent(4900.0, 0, 30, [{'frame_type': 'data_blocked', 'limit': 1000}]),
    received(5009.995, 0, 7, [{'frame_type': 'max_data', 'maximum': 5000}]),
    sent(5010.0, 0, 12, stream(9, 0, 100)),
    lost(5950.0, 1, 99),
    sent(6005.0, 0, 13, stream(13, 0, 100)),
    sent(8005.0, 0, 14, stream(17, 0, 100)),
    sent(9000.5, 0, 15, stream(21, 0, 100)),
    sent(1000.0, 0, 16, stream(25, 0, 100)),
    sent(10000.0, 0, 17, stream(29, 0, 100)),
    sent(11000.0, 0, 18, stream(33, 0, 100)),
    lost(11060.0, 0, 18),
]

CLIENT = [
    received(3080.0, 0, 20, stream(1, 0, 100)),
    received(4030.0, 0, 11, stream(5, 0, 100)),
    received(5035.0, 0, 12, stream(9, 0, 100)),
    received(6030.0, 0, 13, stream(13, 0, 100)),
    received(8030.0, 0, 14, stream(17, 0, 100)),
    received(9025.0, 0, 15, stream(21, 0, 100)),
    received(1030.0, 0, 16, stream(25, 0, 100)),
    received(10025.0, 0, 17, stream(29, 0, 100)),
]


def write_seq(path, events):
    with open(path, 'w') as f:
        for e in events:
            f.write('\x1e' + json.dumps(e) + '\n')


SCRIPT = os.path.join(HERE, 'late_causes.py')


def write_logs(d, lines):
    """Writes each {name: lines} log into folder d; returns their paths."""
    logs = []
    for name, ls in lines.items():
        logs.append(os.path.join(d, name))
        with open(logs[-1], 'w') as f:
            f.write(''.join(l + '\n' for l in ls))
    return logs


def table(logs, *opts):
    """The lines late_causes.py --table prints for logs."""
    return subprocess.run([sys.executable, SCRIPT, '--table', *opts] + logs,
                          capture_output=True, text=True, check=True).stdout.splitlines()


class LateCausesTest(unittest.TestCase):
    def test_classes(self):
        with tempfile.TemporaryDirectory() as run:
            with open(os.path.join(run, 'messages.csv'), 'w', newline='') as f:
                w = csv.DictWriter(f, fieldnames=FIELDS)
                w.writeheader()
                for seq, (sid, created, mct, _) in MESSAGES.items():
                    w.writerow({'source': 's1', 'kind': 'periodic', 'seq': seq, 'priority': 'true', 'length': 100,
                                'created_ms': created, 'started_ms': created, 'mct_ms': mct, 'stream_id': sid,
                                'status': 'completed', 'warmup': 'false'})
                # Another source's late message is not counted.
                w.writerow({'source': 'background', 'kind': 'bulk', 'seq': 0, 'length': 100, 'created_ms': 0,
                            'mct_ms': 999, 'stream_id': 3, 'status': 'completed'})
            os.mkdir(os.path.join(run, 'qlog'))
            write_seq(os.path.join(run, 'qlog', 'x_server.sqlog'), SERVER)
            write_seq(os.path.join(run, 'qlog', 'x_client.sqlog'), CLIENT)
            p = subprocess.run([sys.executable, os.path.join(HERE, 'late_causes.py'), run],
                               capture_output=True, text=True, check=True)
        got = {int(m.group(1)): m.group(2) for m in re.finditer(r'seq=(\d+) .* cause=(.*)', p.stderr)}
        want = {seq: c for seq, (_, _, _, c) in MESSAGES.items() if c is not None}
        self.assertEqual(got, want)
        self.assertIn('late 8 ', p.stdout)


    def test_table(self):
        # Two logs by hand: x has three late messages (one in the first two
        # seconds) with MCTs 30, 40 and 50 ms, y has none but one lost.
        lines = {'late-x.log': ['rep0 seq=1 created=100.0 mct=30.0 cause=queue (<2s)',
                                'rep0 seq=5 created=3000.0 mct=50.0 cause=queue',
                                'rep1 seq=9 created=4000.0 mct=40.0 cause=window-full'],
                 'late-y.log': ['rep0 seq=2 created=5000.0 mct=80.0 cause=lost']}
        with tempfile.TemporaryDirectory() as d:
            logs = write_logs(d, lines)
            counts = table(logs)
            out = os.path.join(d, 'mct.md')
            subprocess.run([sys.executable, SCRIPT, '--table', '--mct', '-o', out] + logs, check=True)
            mct = open(out).read().splitlines()
            with open(logs[1], 'a') as f:
                f.write('rep0 seq=3 created=1.0 mct=99.0 cause=unknown\n')
            bad = subprocess.run([sys.executable, SCRIPT, '--table'] + logs, capture_output=True, text=True)
        self.assertEqual(counts[0], '| scheduler | late (> 27.9 ms) | queue | flow control | held back after a loss '
                                    '| held back, window full | lost | other |')
        # queue: 2, one early; window full: 1; the late column 3 (1 early).
        self.assertEqual(counts[2], '| `x` | 3 (1 in the first 2 s) | 2 (1) | 0 | 0 | 1 (0) | 0 | 0 |')
        self.assertEqual(counts[3], '| `y` | 1 (0 in the first 2 s) | 0 | 0 | 0 | 0 | 1 (0) | 0 |')
        # queue's MCTs 30 and 50: median 40.0, largest 50.0.
        self.assertEqual(mct[2], '| `x` | 40.0 (50.0) | – | – | 40.0 (40.0) | – | – |')
        self.assertEqual(mct[3], '| `y` | – | – | – | – | 80.0 (80.0) | – |')
        # A line it cannot read stops it, naming the file and line.
        self.assertNotEqual(bad.returncode, 0)
        self.assertIn('late-y.log:2:', bad.stderr)

    def test_table_not_delivered(self):
        # A message never delivered (mct=inf) adds a "not delivered" column
        # to both tables; its MCT prints as inf.
        lines = {'late-x.log': ['rep0 seq=1 created=100.0 mct=30.0 cause=queue (<2s)',
                                'rep0 seq=4 created=3000.0 mct=inf cause=not-delivered'],
                 'late-y.log': ['rep0 seq=2 created=5000.0 mct=80.0 cause=lost']}
        with tempfile.TemporaryDirectory() as d:
            logs = write_logs(d, lines)
            counts = table(logs)
            mct = table(logs, '--mct')
        self.assertEqual(counts[0], '| scheduler | late (> 27.9 ms) | queue | flow control | held back after a loss '
                                    '| held back, window full | lost | other | not delivered |')
        self.assertEqual(counts[1], '|---|---|' + '---|' * 7)
        self.assertEqual(counts[2], '| `x` | 2 (1 in the first 2 s) | 1 (1) | 0 | 0 | 0 | 0 | 0 | 1 (0) |')
        self.assertEqual(counts[3], '| `y` | 1 (0 in the first 2 s) | 0 | 0 | 0 | 0 | 1 (0) | 0 | 0 |')
        self.assertEqual(mct[2], '| `x` | 30.0 (30.0) | – | – | – | – | – | inf (inf) |')
        self.assertEqual(mct[3], '| `y` | – | – | – | – | 80.0 (80.0) | – | – |')


if __name__ == '__main__':
    unittest.main()
