// Package deploy holds what runs mpq outside one process, as scripts with
// the tests that run them: slurm (sweeps as a Slurm job array), vm (the
// namespace backend with netem inside a QEMU virtual machine) and
// cloudlab (the CloudLab profile, the Emulab NS file and the nodes'
// startup script for two-host runs).
//
// This package itself holds no code.
package deploy
