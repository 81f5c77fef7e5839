package cli

import (
	"testing"

	"github.com/mpq/mpq/mpquic/core"
)

// TestMemoryBudgetPlan: mpq serve splits --memory-budget into the
// process's own memory, the collector's room and the send budget (which
// charges each connection connMemory), and sets the soft memory limit so
// that the live heap those allow stays collectorRoom below it (less the
// binary's resident code, which RSS holds besides the runtime's memory).
func TestMemoryBudgetPlan(t *testing.T) {
	for _, budget := range []int64{minMemoryBudget, 64 << 20, defaultMemoryBudget, 4 << 30} {
		b := serverBudget(budget)
		if got := processMemory + collectorRoom(budget) + b.Limit(); got != budget {
			t.Errorf("budget %d: process %d + collector %d + send budget %d = %d", budget, processMemory, collectorRoom(budget), b.Limit(), got)
		}
		if !b.Admits() {
			t.Errorf("budget %d affords no connection", budget)
		}
		live := budget - codeMemory - collectorRoom(budget)
		if room := softMemoryLimit(budget) - live; room < minCollectorRoom {
			t.Errorf("budget %d: soft memory limit %d leaves %d above the live heap's bound %d", budget, softMemoryLimit(budget), room, live)
		}
		if softMemoryLimit(budget) > budget {
			t.Errorf("budget %d: soft memory limit %d above it", budget, softMemoryLimit(budget))
		}
	}
	// The default affords about 2,600 connections: their state and
	// MinSendShare each.
	b := serverBudget(defaultMemoryBudget)
	if n := b.Limit() / (connMemory + core.MinSendShare); n < 2000 {
		t.Errorf("the default budget affords %d connections", n)
	}
}
