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

// BusyFraction is busy ticks over all ticks between two readings; the
// machine's own reading parses.
func TestBusyFraction(t *testing.T) {
	if f := BusyFraction(CPUTimes{Busy: 100, Total: 400}, CPUTimes{Busy: 175, Total: 500}); f != 0.75 {
		t.Errorf("fraction %v, want 0.75", f)
	}
	if f := BusyFraction(CPUTimes{Busy: 1, Total: 5}, CPUTimes{Busy: 1, Total: 5}); f != 0 {
		t.Errorf("no time: %v", f)
	}
	c, err := ReadCPU()
	if err != nil {
		t.Skip(err)
	}
	if c.Total == 0 || c.Busy > c.Total {
		t.Errorf("/proc/stat: %+v", c)
	}
}
