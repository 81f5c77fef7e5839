// Package vm holds the test of testbed/vm/run, the script that runs an
// experiment file with the namespace backend in a QEMU virtual machine
// whose kernel has netem (see testbed/README.md, "netem in a virtual
// machine"). It has no Go API: the script is the tool.
package vm
