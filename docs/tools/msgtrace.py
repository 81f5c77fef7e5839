#!/usr/bin/env python3
"""Trace the slow messages of one run of mpq (docs/results/path-failure.md, "Path failure
and handover").

    python3 docs/tools/msgtrace.py RUN_DIR [THRESHOLD_MS [FROM_MS]]

RUN_DIR is a run's directory written with [output] qlog = true (the server
sends the messages of a periodic source). For every message of the run's
first source whose MCT is over THRESHOLD_MS (default 40) and that was
created at or after FROM_MS (default 0), it prints the paths' congestion
window, bytes in flight and smoothed RTT at its creation (the server's
last recovery_metrics_updated before it), what the server sent between
the creation and the message's first packet (packets of other streams,
those carrying data below the highest offset the stream had sent counted
as retransmissions), the server's path events in that time, and each
packet that carried the message's bytes: its send time, path, packet
number, offset and length, when the client received it and when the
server declared it lost, all in ms after the creation, and how many
retransmission packets of other streams left between it and the
message's packet before it.

A stream carries several messages one after the other, of any source (the
application reuses a stream once the reply freed it): the message's bytes
are found by their offsets, the lengths of the messages that started on
the stream before it summed.
"""

import bisect
import collections
import csv
import glob
import json
import sys


def events(path):
    """Yields the qlog file's events (JSON-SEQ: records start with RS)."""
    with open(path) as f:
        for line in f:
            line = line.strip("\x1e \n")
            if line.startswith('{"time"'):
                yield json.loads(line)


def main():
    run = sys.argv[1]
    threshold = float(sys.argv[2]) if len(sys.argv) > 2 else 40.0
    start = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
    rows = list(csv.DictReader(open(run + "/messages.csv")))
    first = rows[0]["source"]
    msgs = [r for r in rows if r["source"] == first]
    # The byte range of each message on its stream: the messages of every
    # source a stream carried, in the order they started on it.
    used, span = collections.Counter(), {}
    for r in sorted(rows, key=lambda r: (float(r["started_ms"] or "inf"), float(r["created_ms"]))):
        if not r["stream_id"]:
            continue
        sid, n = int(r["stream_id"]), int(r["length"])
        span[(r["source"], r["seq"])] = (used[sid], used[sid] + n)
        used[sid] += n
    slow = [r for r in msgs if r["mct_ms"] and float(r["mct_ms"]) > threshold and float(r["created_ms"]) >= start]
    sids = {int(r["stream_id"]) for r in slow}

    server = glob.glob(run + "/qlog/*_server.sqlog")[0]
    client = glob.glob(run + "/qlog/*_client.sqlog")[0]
    sent = collections.defaultdict(list)  # stream -> (t, path, pn, off, len, index in other)
    other = []  # (t, path, stream, retransmission)
    high = collections.Counter()  # stream -> highest offset sent
    lost, mark, path_events = {}, set(), []
    metrics = collections.defaultdict(list)
    for e in events(server):
        d, t = e["data"], e["time"]
        if e["name"] == "quic:packet_sent":
            pn = d["header"].get("packet_number")
            for f in d.get("frames", []):
                if f.get("frame_type") != "stream":
                    continue
                sid, off, n = f["stream_id"], f["offset"], f.get("raw", {}).get("length", 0)
                if sid in sids:
                    sent[sid].append((t, d["path_id"], pn, off, n, len(other)))
                    mark.add((d["path_id"], pn))
                other.append((t, d["path_id"], sid, off < high[sid]))
                high[sid] = max(high[sid], off + n)
        elif e["name"] == "quic:packet_lost":
            lost[(d["path_id"], d["header"]["packet_number"])] = (t, d.get("trigger", ""))
        elif e["name"] == "quic:recovery_metrics_updated":
            metrics[d["path_id"]].append((t, d.get("congestion_window"), d.get("bytes_in_flight"), d.get("smoothed_rtt")))
        elif e["name"] == "quic:tuple_assigned" and "path_event" in d:
            path_events.append((t, d["path_id"], d["path_event"]))
    recv = {}
    for e in events(client):
        d = e["data"]
        if e["name"] == "quic:packet_received" and "path_id" in d:
            k = (d["path_id"], d["header"].get("packet_number"))
            if k in mark:
                recv[k] = e["time"]
    times = {p: [m[0] for m in v] for p, v in metrics.items()}
    other_t = [o[0] for o in other]

    for r in slow:
        sid, c = int(r["stream_id"]), float(r["created_ms"])
        lo, hi = span[(r["source"], r["seq"])]
        pk = [s for s in sent[sid] if s[3] + s[4] > lo and s[3] < hi]
        print(f"message {r['seq']} created {c:.3f} ms, MCT {float(r['mct_ms']):.1f} ms")
        for p in sorted(metrics):
            i = bisect.bisect_right(times[p], c) - 1
            if i >= 0:
                _, cw, fl, srtt = metrics[p][i]
                print(f"  at creation, path {p}: cwnd {cw} B, in flight {fl} B, srtt {srtt:.1f} ms")
        if pk:
            f0 = pk[0][0]
            before = other[bisect.bisect_left(other_t, c):pk[0][5]]
            rtx = sum(1 for o in before if o[3] and o[2] != sid)
            new = sum(1 for o in before if not o[3] and o[2] != sid)
            print(f"  first packet +{f0 - c:.1f} ms; before it the server sent {rtx} retransmission and {new} other packets of other streams")
            for t, p, ev in path_events:
                if c - 200 <= t <= pk[-1][0]:
                    print(f"  path {p} {ev} at +{t - c:.1f} ms")
        prev = None
        for t, p, pn, off, n, i in pk:
            rv, ls = recv.get((p, pn)), lost.get((p, pn))
            rs = f"received +{rv - c:.1f}" if rv is not None else "never received"
            lsx = f", lost +{ls[0] - c:.1f} ({ls[1]})" if ls else ""
            gap = ""
            if prev is not None:
                k = sum(1 for o in other[prev:i] if o[3] and o[2] != sid)
                if k:
                    gap = f" (after {k} retransmission packets of other streams since its previous packet)"
            prev = i + 1
            print(f"  +{t - c:6.1f} path {p} pn {pn} bytes [{off}, {off + n}) {rs}{lsx}{gap}")


if __name__ == "__main__":
    main()
