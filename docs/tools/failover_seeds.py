#!/usr/bin/env python3
"""Per-seed numbers of experiments/failover.toml's repeated runs
(docs/results/path-failure.md, "Path failure and handover", "Ten seeds").

    python3 docs/tools/failover_seeds.py POINT_DIR...

POINT_DIR is one grid point of `mpq run --repeat N` (the directory that
holds rep0 ... rep<N-1>). For each it prints one Markdown table row whose
cells list the repetitions in seed order: the MCT p99 of the first
source's messages, over all of them and over those created at or after
5 s (what `output.warmup = "5s"` keeps; the p99 is the nearest-rank
quantile that summary.json gives, checked against it for all messages),
how many runs of the N have each under 40 ms, the messages over 40 ms
(all, created in the first second, created at or after 5 s), the largest
MCT, the time after 10 s of the server's first `failed` event for path 0
("–" if none), and the background source's goodput (mean, min-max).
A failed message counts as infinitely slow; the tool stops if any run has
one, so that no table hides it.
"""

import csv
import glob
import json
import math
import os
import sys

LATE_MS = 5000   # "from 5 s"
FIRST_MS = 1000  # "the first second"
BOUND_MS = 40.0  # the issue's bound on cwr-red's p99
CHANGE_S = 10.0  # path 0 goes down


def nearest_rank(values, q):
    v = sorted(values)
    return v[max(0, math.ceil(q * len(v)) - 1)]


def run_stats(d):
    s = json.load(open(os.path.join(d, "summary.json")))
    src = s["sources"][0]["name"]
    msgs = [m for m in csv.DictReader(open(os.path.join(d, "messages.csv"))) if m["source"] == src]
    failed = [m for m in msgs if m["status"] != "completed"]
    if failed:
        sys.exit(f"{d}: {len(failed)} failed messages ({failed[0]['failed']})")

    def mct(sel):
        return [float(m["mct_ms"]) for m in msgs if sel(float(m["created_ms"]))]

    every, late, first = mct(lambda c: True), mct(lambda c: c >= LATE_MS), mct(lambda c: c < FIRST_MS)
    p99 = nearest_rank(every, 0.99)
    if abs(p99 - s["sources"][0]["mct_ms"]["p99"]) > 0.001:
        sys.exit(f"{d}: p99 {p99} against summary.json's {s['sources'][0]['mct_ms']['p99']}")
    events = s["paths"][0].get("events", {}).get("server", [])
    fail = [e["time_s"] for e in events if e["event"] == "failed"]
    bg = [x for x in s["sources"] if x["name"] == "background"]
    return {
        "p99": p99, "p99late": nearest_rank(late, 0.99),
        "over": sum(x > BOUND_MS for x in every), "over1st": sum(x > BOUND_MS for x in first),
        "overlate": sum(x > BOUND_MS for x in late), "max": max(every),
        "failed": "%.0f" % ((fail[0] - CHANGE_S) * 1000) if fail else "–",
        "goodput": bg[0]["goodput_mbps"] if bg else 0.0,
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for point in sys.argv[1:]:
        reps = sorted(glob.glob(os.path.join(point, "rep*")), key=lambda p: int(p.rsplit("rep", 1)[1]))
        if not reps:
            sys.exit(f"{point}: no rep* directories")
        rs = [run_stats(r) for r in reps]
        n = len(rs)
        cell = lambda k, fmt: " ".join(fmt % r[k] if not isinstance(r[k], str) else r[k] for r in rs)
        gp = [r["goodput"] for r in rs]
        print(f"| {os.path.basename(point.rstrip('/'))} "
              f"| {cell('p99', '%.1f')} | {sum(r['p99'] < BOUND_MS for r in rs)} of {n} "
              f"| {cell('p99late', '%.1f')} | {sum(r['p99late'] < BOUND_MS for r in rs)} of {n} "
              f"| {cell('over', '%d')} | {cell('over1st', '%d')} | {cell('overlate', '%d')} "
              f"| {cell('max', '%.1f')} | {cell('failed', '%s')} "
              f"| {sum(gp) / n:.1f} ({min(gp):.1f}-{max(gp):.1f}) |")


if __name__ == "__main__":
    main()
