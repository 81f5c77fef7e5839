// Package vm holds the tests of deploy/vm/run, the script that runs an
// experiment file with the namespace backend in a QEMU virtual machine
// whose kernel has netem (see docs/guides/testbeds.md, "netem in a virtual
// machine"). deploy/vm/rehearse rehearses the CloudLab profile in three
// such machines with a Debian root (docs/guides/testbeds.md, "A CloudLab
// rehearsal on one machine"); its helper is deploy/vm/rehearsal. It has no
// Go API: the scripts are the tools.
package vm
