package schedlag

import (
	"testing"
	"time"
)

// Measure times real sleeps: never negative, and a busy machine is busy
// for a tolerance of nothing.
func TestMeasure(t *testing.T) {
	lag := Measure(10)
	if lag < 0 || lag > time.Second {
		t.Fatalf("lag %v", lag)
	}
	if busy, _ := Busy(0); !busy {
		t.Error("not busy for a tolerance of 0")
	}
	t.Logf("median lag %v", lag)
}
