// Package analysis_test runs the unit tests of the Python analysis aids in
// experiments/analysis (test_*.py) from go test; they are skipped without
// python3.
package analysis_test

import (
	"os/exec"
	"testing"
)

func TestPythonAnalysis(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	out, err := exec.Command(py, "-m", "unittest", "discover", "-s", ".", "-p", "test_*.py").CombinedOutput()
	if err != nil {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
}
