package scheduler

import (
	"reflect"
	"testing"
	"time"
)

func TestPriorityFIFONext(t *testing.T) {
	bg := func(id, seq uint64) StreamInfo { return StreamInfo{ID: id, ReadySeq: seq, Pending: 100} }
	prio := func(id, seq uint64) StreamInfo {
		return StreamInfo{ID: id, Priority: true, ReadySeq: seq, Pending: 100}
	}
	retx := func(s StreamInfo) StreamInfo { s.HasRetransmission = true; return s }
	tests := []struct {
		name    string
		streams []StreamInfo
		want    uint64 // stream ID
	}{
		{"single stream", []StreamInfo{bg(4, 7)}, 4},
		{"background FIFO by ready time, not ID", []StreamInfo{bg(0, 9), bg(8, 3), bg(4, 5)}, 8},
		{"priority before older background", []StreamInfo{bg(0, 1), prio(8, 9)}, 8},
		{"priority FIFO", []StreamInfo{prio(0, 9), prio(8, 2), prio(4, 5)}, 8},
		{"background retransmission before priority", []StreamInfo{prio(0, 1), retx(bg(8, 9))}, 8},
		{"retransmissions FIFO whatever their priority", []StreamInfo{retx(prio(0, 9)), retx(bg(8, 2))}, 8},
		{"equal ready time: lower ID", []StreamInfo{bg(8, 3), bg(4, 3)}, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			i := (&PriorityFIFO{}).Next(time.Time{}, tc.streams)
			if got := tc.streams[i].ID; got != tc.want {
				t.Fatalf("served stream %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPriorityFIFOOrder drains a mixed set packet by packet and checks the
// whole service order: retransmissions, then priority FIFO, then the rest
// FIFO.
func TestPriorityFIFOOrder(t *testing.T) {
	streams := []StreamInfo{
		{ID: 0, ReadySeq: 0, Pending: 2},                                           // background, oldest
		{ID: 4, ReadySeq: 1, Pending: 1, Priority: true},                           // priority
		{ID: 8, ReadySeq: 2, Pending: 1, HasRetransmission: true},                  // background retransmission
		{ID: 12, ReadySeq: 3, Pending: 1},                                          // background
		{ID: 16, ReadySeq: 4, Pending: 2, Priority: true},                          // priority
		{ID: 20, ReadySeq: 5, Pending: 1, Priority: true, HasRetransmission: true}, // priority retransmission
	}
	s := &PriorityFIFO{}
	var got []uint64
	for len(streams) > 0 {
		i := s.Next(time.Time{}, streams)
		got = append(got, streams[i].ID)
		// One packet of the stream leaves; a retransmitted stream has
		// nothing else pending in this script.
		streams[i].HasRetransmission = false
		streams[i].Pending--
		if streams[i].Pending == 0 {
			streams = append(streams[:i], streams[i+1:]...)
		}
	}
	want := []uint64{8, 20, 4, 16, 16, 0, 0, 12}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("service order %v, want %v", got, want)
	}
}

func TestPriorityFIFOMaxStreamFrames(t *testing.T) {
	s, err := NewStreamScheduler("priority-fifo")
	if err != nil {
		t.Fatal(err)
	}
	if s.Name() != "priority-fifo" || s.MaxStreamFrames() != 1 {
		t.Fatalf("%s: MaxStreamFrames %d, want 1", s.Name(), s.MaxStreamFrames())
	}
}
