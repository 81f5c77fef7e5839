package core

import "testing"

// connIDs.get finds the same set as the map, by index below
// maxSmallPathID and in the map above, whatever order the sets were made
// in, and nil for a path ID without one.
func TestConnIDsGet(t *testing.T) {
	var ids connIDs
	ids.init(nil)
	for _, id := range []uint64{5, 0, 63, 64, 100, 2} {
		ids.set(id)
	}
	for id := uint64(0); id < 200; id++ {
		if got, want := ids.get(id), ids.sets[id]; got != want {
			t.Errorf("get(%d) = %p, want %p", id, got, want)
		}
	}
	if ids.get(1) != nil || ids.get(65) != nil || ids.get(5) == nil || ids.get(100) == nil {
		t.Error("get of a missing or present path ID")
	}
}
