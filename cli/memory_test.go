package cli

import (
	"context"
	"runtime/debug"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/core"
)

// TestReturnMemorySetsLimit: mpq serve's soft memory limit follows the
// open connections, connMemory each above the send budget and the margin,
// so that the collector keeps the heap near what they hold instead of
// letting it grow to a fixed margin above the budget.
func TestReturnMemorySetsLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	const budget = 256 << 20
	b := core.NewSendBudget(budget)
	if got, want := softMemoryLimit(budget, 1000), int64(budget+1000*connMemory+memoryLimitMargin); got != want {
		t.Fatalf("softMemoryLimit(256 MiB, 1000) = %d, want %d", got, want)
	}
	debug.SetMemoryLimit(softMemoryLimit(budget, 0))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go returnMemory(ctx, b, func() int { return 1000 }, true)
	want := softMemoryLimit(budget, 1000)
	for deadline := time.Now().Add(3 * time.Second); debug.SetMemoryLimit(-1) != want; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("soft memory limit %d with 1,000 connections open, want %d", debug.SetMemoryLimit(-1), want)
		}
	}
}
