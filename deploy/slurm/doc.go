// Package slurm holds run-local.sh, which runs the Slurm job-array
// recipe for real on a one-node Slurm cluster it starts (munged,
// slurmctld and slurmd with a minimal slurm.conf in a temporary
// directory): 4 shards of a small sweep as a job array, merged by mpq
// aggregate in a job that depends on it, checked byte for byte against
// the unsharded run. Its test runs the script; it skips, saying why,
// where Slurm is not installed or the user is not root, unless
// MPQ_REQUIRE_SLURM is set (CI sets it after installing slurm-wlm and
// munge).
package slurm
