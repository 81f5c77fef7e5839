package scheduler

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func path(id uint64, srtt time.Duration, cwnd, inflight uint64) PathInfo {
	return PathInfo{ID: id, Validated: true, SRTT: srtt, CWND: cwnd, BytesInFlight: inflight,
		PacingBudget: math.MaxUint64, MaxPacketSize: 1350}
}

func TestLowRTT(t *testing.T) {
	ms := time.Millisecond
	backup := path(2, 5*ms, 10000, 0)
	backup.Status = StatusBackup
	failed := path(0, 10*ms, 10000, 0)
	failed.ConsecutivePTOs = FailedPTOs
	unvalidated := path(3, 1*ms, 10000, 0)
	unvalidated.Validated = false
	tests := []struct {
		name  string
		paths []PathInfo
		want  []uint64
	}{
		{"lowest srtt wins", []PathInfo{path(0, 50*ms, 10000, 0), path(1, 20*ms, 10000, 0)}, []uint64{1}},
		{"full window skipped", []PathInfo{path(0, 50*ms, 10000, 0), path(1, 20*ms, 10000, 9000)}, []uint64{0}},
		{"exact fit allowed", []PathInfo{path(0, 50*ms, 10000, 10000-1350)}, []uint64{0}},
		{"all full: nothing", []PathInfo{path(0, 50*ms, 10000, 9000), path(1, 20*ms, 10000, 9000)}, nil},
		{"backup unused while available usable", []PathInfo{path(0, 50*ms, 10000, 0), backup}, []uint64{0}},
		{"backup not used when available is only cwnd-limited", []PathInfo{path(0, 50*ms, 10000, 9000), backup}, nil},
		{"backup used when available failed", []PathInfo{failed, backup}, []uint64{2}},
		{"unvalidated never", []PathInfo{path(0, 50*ms, 10000, 0), unvalidated}, []uint64{0}},
		{"tie goes to first", []PathInfo{path(0, 20*ms, 10000, 0), path(1, 20*ms, 10000, 0)}, []uint64{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := (&LowRTT{}).Select(time.Time{}, tt.paths, Work{Class: ClassBackground, Size: 1350}, nil)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRoundRobinPaths(t *testing.T) {
	ms := time.Millisecond
	paths := []PathInfo{path(0, 50*ms, 10000, 0), path(1, 20*ms, 10000, 0), path(2, 30*ms, 10000, 9000)}
	s := &RoundRobinPaths{}
	var got []uint64
	for i := 0; i < 4; i++ {
		got = s.Select(time.Time{}, paths, Work{Size: 1350}, got)
	}
	if want := []uint64{0, 1, 0, 1}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v (path 2 is full)", got, want)
	}
}

func TestRoundRobinStreams(t *testing.T) {
	s := &RoundRobinStreams{}
	streams := []StreamInfo{{ID: 8}, {ID: 0}, {ID: 4}}
	var got []uint64
	for i := 0; i < 5; i++ {
		got = append(got, streams[s.Next(time.Time{}, streams)].ID)
	}
	if want := []uint64{0, 4, 8, 0, 4}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// A stream that appears later is served in its turn.
	streams = append(streams, StreamInfo{ID: 6})
	if id := streams[s.Next(time.Time{}, streams)].ID; id != 6 {
		t.Fatalf("got %d, want 6", id)
	}
}

func TestRegistry(t *testing.T) {
	for _, n := range []string{"lowrtt", "round-robin"} {
		s, err := NewPathScheduler(n)
		if err != nil || s.Name() != n {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if _, err := NewPathScheduler("nope"); err == nil {
		t.Fatal("unknown name accepted")
	}
	if s, err := NewStreamScheduler("round-robin"); err != nil || s.Name() != "round-robin" {
		t.Fatal(err)
	}
}

// Packet sizes of the Select tests: full packets of simMPS bytes, of
// which simOverhead are not stream data.
const (
	simMPS      = 1350
	simOverhead = 50
	simPayload  = simMPS - simOverhead
)
