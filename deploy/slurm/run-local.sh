#!/usr/bin/env bash
# run-local.sh: docs/guides/sweeps.md's Slurm job-array recipe, run for real on a
# one-node Slurm cluster started here (root; Debian's slurm-wlm and munge).
#
#   deploy/slurm/run-local.sh [--install] [--keep]
#
# It starts munged, slurmctld and slurmd in the foreground of this script
# (their own configuration, state, sockets and logs in a temporary
# directory; no system service is touched), submits the recipe: a job
# array of 4 shards of a small sweep (experiments/quickstart.toml, 2 s,
# 2 repetitions: 6 runs) writing into one directory, then `mpq aggregate`
# as a job depending on the array (afterok). It waits for both (bounded),
# runs the same sweep unsharded, and checks that the merged results equal
# it file for file and byte for byte, except the wall-clock fields
# (summary.json: wall_s and provenance.started; aggregate.json:
# provenance.started), as docs/guides/sweeps.md says. Finally it stops the three
# daemons it started, by their PIDs, and removes its directory (--keep
# keeps it, to read the logs).
#
# --install installs slurm-wlm and munge with apt-get when missing.
# Exit status: 0 when the merged results equal the unsharded run; 1 when
# they differ or a job failed; 77 when Slurm is not installed (without
# --install) or cannot run here (not root): skipped, with the reason on
# stderr. MPQ names the mpq binary to use (default: built from this
# checkout into the temporary directory).
set -euo pipefail

install=0 keep=0
for a in "$@"; do
  case "$a" in
    --install) install=1 ;;
    --keep) keep=1 ;;
    *) echo "usage: $0 [--install] [--keep]" >&2; exit 2 ;;
  esac
done

skip() { echo "run-local.sh: skipped: $*" >&2; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "needs root (slurmd runs the jobs as root here)"
need=(munged slurmctld slurmd sbatch scontrol sinfo squeue scancel)
missing=0
for b in "${need[@]}"; do command -v "$b" >/dev/null 2>&1 || missing=1; done
if [ "$missing" -eq 1 ]; then
  if [ "$install" -eq 1 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null ||
      { apt-get update -qq && apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null; } ||
      skip "apt-get could not install slurm-wlm and munge"
  else
    skip "Slurm is not installed (apt-get install slurm-wlm munge, or run with --install)"
  fi
fi

repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/mpq-slurm.XXXXXX)
chmod 755 "$work"
pids=()
cleanup() {
  status=$?
  set +e
  if [ -n "${SLURM_CONF:-}" ] && [ -n "${jobs_submitted:-}" ]; then
    scancel $jobs_submitted >/dev/null 2>&1
  fi
  # The daemons this script started, by PID, newest first.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill "${pids[i]}" 2>/dev/null
  done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null
  done
  if [ "$keep" -eq 1 ]; then
    echo "run-local.sh: kept $work" >&2
  else
    rm -rf "$work"
  fi
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "run-local.sh: $*" >&2; }

# Up to $1 seconds for command $2... to succeed.
wait_for() {
  local t=$1; shift
  for _ in $(seq $((t * 5))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  return 1
}

mpq=${MPQ:-}
if [ -z "$mpq" ]; then
  mpq=$work/mpq
  (cd "$repo" && GOFLAGS=-buildvcs=false go build -o "$mpq" ./cmd/mpq)
fi

# munge: a fresh key and socket of our own.
mkdir -p "$work/munge"
chmod 755 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
sock=$work/munge/munge.socket
munged --foreground --force --key-file="$work/munge/munge.key" --socket="$sock" \
  --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
  --seed-file="$work/munge/munged.seed" >"$work/munge/munged.out" 2>&1 &
pids+=($!)
wait_for 10 test -S "$sock" || { log "munged did not start:"; cat "$work/munge/munged.log" >&2; exit 1; }

host=$(hostname -s)
cpus=$(nproc)
# Ports of our own, away from Slurm's defaults (6817, 6818).
ctlport=$((20000 + RANDOM % 20000))
dport=$((ctlport + 1))
mkdir -p "$work/state" "$work/spool"
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<EOF
ClusterName=mpqlocal
SlurmctldHost=$host
SlurmctldPort=$ctlport
SlurmdPort=$dport
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MinJobAge=600
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -D -i -f "$SLURM_CONF" >"$work/slurmctld.out" 2>&1 &
pids+=($!)
wait_for 20 scontrol ping || { log "slurmctld did not start:"; tail -20 "$work/slurmctld.log" "$work/slurmctld.out" >&2; exit 1; }
slurmd -D -f "$SLURM_CONF" >"$work/slurmd.out" 2>&1 &
pids+=($!)
idle() { sinfo -h -n "$host" -o %T | grep -qx idle; }
wait_for 30 idle || { log "the node did not become idle:"; sinfo >&2; tail -20 "$work/slurmd.log" "$work/slurmd.out" >&2; exit 1; }
log "Slurm up: node $host, $cpus CPUs, $(sinfo -V)"

# The guide's recipe, on a small sweep: every task a shard, all writing
# into one shared directory, and the aggregation once they all succeeded.
file=$repo/experiments/quickstart.toml
sets=(--set duration=2s --repeat 2)
cat >"$work/sweep.sbatch" <<EOF
#!/bin/bash
#SBATCH --array=1-4
#SBATCH --cpus-per-task=1
#SBATCH --output=$work/shard-%a.log
cd "$work"
"$mpq" run "$file" ${sets[*]} --parallel 1 --shard "\$SLURM_ARRAY_TASK_ID/4" --out "$work/sharded"
EOF
jid=$(sbatch --parsable "$work/sweep.sbatch")
jobs_submitted=$jid
agg=$(sbatch --parsable --dependency=afterok:"$jid" --output="$work/aggregate.log" --wrap "\"$mpq\" aggregate \"$work/sharded/quickstart\"")
jobs_submitted="$jid $agg"
log "submitted the array $jid (4 shards) and the aggregation $agg (afterok:$jid)"

# Until no job is left (bounded: 5 minutes).
left() { [ -n "$(squeue -h -j "$jid,$agg" -o %i 2>/dev/null)" ]; }
for _ in $(seq 1500); do left || break; sleep 0.2; done
if left; then
  log "jobs still queued or running after 5 minutes:"; squeue >&2; exit 1
fi
failed=0
for j in "${jid}_1" "${jid}_2" "${jid}_3" "${jid}_4" "$agg"; do
  state=$(scontrol -o show job "$j" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  code=$(scontrol -o show job "$j" 2>/dev/null | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p')
  log "job $j: ${state:-unknown} (exit $code)"
  [ "$state" = COMPLETED ] || failed=1
done
if [ "$failed" -ne 0 ]; then
  for f in "$work"/shard-*.log "$work/aggregate.log"; do [ -f "$f" ] && { echo "== $f"; cat "$f"; } >&2; done
  exit 1
fi

# The same sweep at once, from the same directory as the jobs (the
# provenance names the checkout a run was started in).
(cd "$work" && "$mpq" run "$file" "${sets[@]}" --parallel 2 --out "$work/whole" >/dev/null 2>"$work/whole.log")

# File for file, byte for byte, but the wall-clock fields.
strip() {
  case "$1" in
    */summary.json) grep -v -E '^  "wall_s": |^    "started": ' "$1" ;;
    */aggregate.json) grep -v -E '^    "started": ' "$1" ;;
    *) cat "$1" ;;
  esac
}
a=$work/whole/quickstart b=$work/sharded/quickstart
(cd "$a" && find . -type f | sort) >"$work/files.whole"
(cd "$b" && find . -type f | sort) >"$work/files.sharded"
if ! cmp -s "$work/files.whole" "$work/files.sharded"; then
  log "the merged shards and the unsharded run hold different files:"
  diff "$work/files.whole" "$work/files.sharded" >&2 || true
  exit 1
fi
n=0
while read -r f; do
  if ! cmp -s <(strip "$a/$f") <(strip "$b/$f"); then
    log "$f differs:"; diff <(strip "$a/$f") <(strip "$b/$f") | head -20 >&2 || true
    exit 1
  fi
  n=$((n + 1))
done <"$work/files.whole"
runs=$(($(wc -l <"$a/runs.csv") - 1))
log "OK: the 4 shards merged by mpq aggregate equal the unsharded run ($runs runs, $n files; wall-clock fields aside)"
