package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/mpq/mpq/experiment"
)

// In the simulator a path whose down direction follows a trace of 12
// Mbit/s (one 1500-byte opportunity a millisecond, its rate key ignored)
// carries bulk at the trace's capacity less the packets' overhead: from
// 2 s on 11 to 12 Mbit/s of goodput, where the path's own rate would
// give 50. A trace of the same mean that sends only in the first half of
// each second (two opportunities a millisecond) carries bulk in bursts
// (nothing arrives in the second halves; NewReno, its packets stuck for
// half a second at a time, uses little of the first halves):
// the trace, not its mean rate, times the packets.
func TestSimTrace(t *testing.T) {
	dir := t.TempDir()
	trace, err := os.ReadFile(filepath.Join("..", "experiments", "traces", "constant-12mbit.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.trace"), trace, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "e.toml")
	doc := "name = \"trace\"\nduration = \"6s\"\n[[path]]\nrate = \"50Mbit\"\nrtt = \"30ms\"\ntrace_down = \"t.trace\"\n" +
		"[transport]\nmultipath = false\n[[source]]\nname = \"bg\"\nkind = \"bulk\"\n"
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err := experiment.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := Run(context.Background(), &runs[0], out); err != nil {
		t.Fatal(err)
	}
	if m := meanMbps(deliveredMbps(t, out), 2000, 6000); m < 11 || m > 12 {
		t.Errorf("goodput %.3f Mbit/s from 2 s on, want 11 to 12", m)
	}
	var half []byte
	for ms := 1; ms <= 500; ms++ {
		half = fmt.Appendf(half, "%d\n%d\n", ms, ms)
	}
	half = append(half, "1000\n"...)
	if err := os.WriteFile(filepath.Join(dir, "t.trace"), half, 0o644); err != nil {
		t.Fatal(err)
	}
	runs, err = experiment.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	out = t.TempDir()
	if _, err := Run(context.Background(), &runs[0], out); err != nil {
		t.Fatal(err)
	}
	// Arrivals are a one-way delay (15 ms) after the opportunities.
	bins := deliveredMbps(t, out)
	for s := 2000.0; s < 6000; s += 1000 {
		on, off := meanMbps(bins, s+100, s+500), meanMbps(bins, s+600, s+1000)
		if on < 2 || off > 0 {
			t.Errorf("second %v: %.2f Mbit/s in its first half, %.2f in its second, want some and 0", s/1000, on, off)
		}
	}
}
