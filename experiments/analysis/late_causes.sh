#!/bin/sh
# usage (from the repository root): sh experiments/analysis/late_causes.sh SCHED [--set ...]
# The base point (Figure 4, 50 ms / 10 kB), its 10 repetitions one at a
# time with qlog traces (170 MB for cwr's first, removed after its analysis);
# the late messages of each, with their causes, in late-SCHED.log (written
# anew). `python3 experiments/analysis/late_causes.py --table late-*.log`
# tabulates the logs.
s=$1; shift
: >late-$s.log
for r in 0 1 2 3 4 5 6 7 8 9; do
  o=late-$s-$r
  go run ./cmd/mpq run experiments/paper-fig4.toml --out $o --set source.s1.interval=50ms --set source.s1.size=10kB --set transport.path_scheduler=$s --set output.qlog=true --set repeat=10 --shard $((r+1))/10 "$@" >/dev/null 2>&1
  d=$(ls -d $o/paper-fig4/*/rep$r)
  python3 experiments/analysis/late_causes.py $d 2>>late-$s.log
  rm -rf $o
done
