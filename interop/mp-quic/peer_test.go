// Package mpquicpeer_test runs the unit tests of conext17.py, the script
// that runs MPQUIC (qdeconinck/mp-quic) on the CoNEXT'17 design in the
// namespace testbed; they are skipped without python3.
package mpquicpeer_test

import (
	"os/exec"
	"testing"
)

func TestConext17Script(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	out, err := exec.Command(py, "-m", "unittest", "test_conext17").CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest test_conext17: %v\n%s", err, out)
	}
}
