// Package vm holds the test of deploy/vm/run, the script that runs an
// experiment file with the namespace backend in a QEMU virtual machine
// whose kernel has netem (see docs/guides/testbeds.md, "netem in a virtual
// machine"). It has no Go API: the script is the tool.
package vm
