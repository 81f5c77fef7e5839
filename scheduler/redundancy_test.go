package scheduler

import (
	"reflect"
	"testing"
	"time"
)

func TestSelectiveRedundancySelect(t *testing.T) {
	const pkt = simMPS
	mk := func(id uint64, srtt time.Duration, inflightPkts int) PathInfo {
		return path(id, srtt, 4*pkt, uint64(inflightPkts*pkt))
	}
	backup := func(p PathInfo) PathInfo { p.Status = StatusBackup; return p }
	failed := func(p PathInfo) PathInfo { p.ConsecutivePTOs = FailedPTOs; return p }
	unvalidated := func(p PathInfo) PathInfo { p.Validated = false; return p }
	work := func(c Class, prio bool) Work { return Work{Class: c, Priority: prio, Size: pkt} }
	tests := []struct {
		name  string
		paths []PathInfo
		w     Work
		want  []uint64
	}{
		{"priority on every path, fastest first", []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, work(ClassPriority, true), []uint64{1, 0}},
		{"priority whatever the windows", []PathInfo{mk(0, 50*ms, 4), mk(1, 20*ms, 9)}, work(ClassPriority, true), []uint64{1, 0}},
		{"priority retransmission too", []PathInfo{mk(0, 50*ms, 4), mk(1, 20*ms, 4)}, work(ClassRetransmission, true), []uint64{1, 0}},
		{"not on backup, failed or unvalidated paths", []PathInfo{mk(0, 50*ms, 4), backup(mk(1, 20*ms, 0)), failed(mk(2, 5*ms, 0)), unvalidated(mk(3, 5*ms, 0))}, work(ClassPriority, true), []uint64{0}},
		{"background: lowest RTT with room", []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 4)}, work(ClassBackground, false), []uint64{0}},
		{"background retransmission: one path", []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, work(ClassRetransmission, false), []uint64{1}},
		{"control: one path", []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0)}, work(ClassControl, false), []uint64{1}},
		{"all full: nothing", []PathInfo{mk(0, 50*ms, 4), mk(1, 20*ms, 4)}, work(ClassBackground, false), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NewSelectiveRedundancy().Select(time.Time{}, tc.paths, tc.w, nil); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSelectiveRedundancyBorrowing: bytes a priority packet sends beyond a
// window are borrowed from the path's window for other data until that
// packet is acknowledged or lost.
func TestSelectiveRedundancyBorrowing(t *testing.T) {
	const pkt = simMPS
	const cwnd = 4 * pkt
	type sent struct {
		inflight uint64 // before the packet
		class    Class
		priority bool // of the Select before it
	}
	tests := []struct {
		name   string
		sent   []sent
		settle func(s *SelectiveRedundancy) // ack or lose some
		want   uint64                       // borrowed after
	}{
		{"within the window: nothing borrowed", []sent{{cwnd - pkt, ClassPriority, true}}, nil, 0},
		{"entirely beyond", []sent{{cwnd, ClassPriority, true}}, nil, pkt},
		{"partly beyond", []sent{{cwnd - 500, ClassPriority, true}}, nil, pkt - 500},
		{"far beyond: at most the packet", []sent{{3 * cwnd, ClassPriority, true}}, nil, pkt},
		{"two packets add up", []sent{{cwnd, ClassPriority, true}, {cwnd + pkt, ClassPriority, true}}, nil, 2 * pkt},
		{"priority retransmission borrows", []sent{{cwnd, ClassRetransmission, true}}, nil, pkt},
		{"background retransmission does not", []sent{{cwnd, ClassRetransmission, false}}, nil, 0},
		{"background and control do not", []sent{{cwnd, ClassBackground, false}, {cwnd, ClassControl, false}}, nil, 0},
		{"ack gives back", []sent{{cwnd, ClassPriority, true}, {cwnd + pkt, ClassPriority, true}},
			func(s *SelectiveRedundancy) { s.OnPacketAcked(time.Time{}, 0, 0) }, pkt},
		{"loss gives back", []sent{{cwnd, ClassPriority, true}, {cwnd + pkt, ClassPriority, true}},
			func(s *SelectiveRedundancy) { s.OnPacketLost(time.Time{}, 0, 1) }, pkt},
		{"each packet gives back once", []sent{{cwnd, ClassPriority, true}, {cwnd + pkt, ClassPriority, true}},
			func(s *SelectiveRedundancy) {
				s.OnPacketAcked(time.Time{}, 0, 0)
				s.OnPacketLost(time.Time{}, 0, 0)
			}, pkt},
		{"other path's packet number: no effect", []sent{{cwnd, ClassPriority, true}},
			func(s *SelectiveRedundancy) { s.OnPacketAcked(time.Time{}, 1, 0) }, pkt},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSelectiveRedundancy()
			for pn, x := range tc.sent {
				p := path(0, 20*ms, cwnd, x.inflight)
				s.Select(time.Time{}, []PathInfo{p}, Work{Class: x.class, Priority: x.priority, Size: pkt}, nil)
				s.OnPacketSent(time.Time{}, &p, uint64(pn), pkt, x.class)
			}
			if tc.settle != nil {
				tc.settle(s)
			}
			if got := s.Borrowed(0); got != tc.want {
				t.Fatalf("borrowed %d, want %d", got, tc.want)
			}
			if got := s.Borrowed(1); got != 0 {
				t.Fatalf("path 1 borrowed %d", got)
			}
		})
	}
}

func TestRedundantSelect(t *testing.T) {
	const pkt = simMPS
	mk := func(id uint64, srtt time.Duration, inflightPkts int) PathInfo {
		return path(id, srtt, 4*pkt, uint64(inflightPkts*pkt))
	}
	backup := func(p PathInfo) PathInfo { p.Status = StatusBackup; return p }
	failed := func(p PathInfo) PathInfo { p.ConsecutivePTOs = FailedPTOs; return p }
	unvalidated := func(p PathInfo) PathInfo { p.Validated = false; return p }
	tests := []struct {
		name  string
		paths []PathInfo
		want  []uint64
	}{
		{"every usable path, fastest first", []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 0), mk(2, 30*ms, 3)}, []uint64{1, 2, 0}},
		{"equal RTTs: order of paths", []PathInfo{mk(5, 20*ms, 0), mk(1, 20*ms, 0)}, []uint64{5, 1}},
		{"full window skipped", []PathInfo{mk(0, 50*ms, 0), mk(1, 20*ms, 4)}, []uint64{0}},
		{"all full: nothing", []PathInfo{mk(0, 50*ms, 4), mk(1, 20*ms, 4)}, nil},
		{"not on backup, failed or unvalidated paths", []PathInfo{mk(0, 50*ms, 0), backup(mk(1, 20*ms, 0)), failed(mk(2, 5*ms, 0)), unvalidated(mk(3, 5*ms, 0))}, []uint64{0}},
		{"backups when no available path is usable", []PathInfo{failed(mk(0, 50*ms, 0)), backup(mk(1, 20*ms, 0)), backup(mk(2, 30*ms, 0))}, []uint64{1, 2}},
	}
	for _, tc := range tests {
		for _, c := range []Class{ClassControl, ClassRetransmission, ClassPriority, ClassBackground} {
			t.Run(tc.name+"/"+c.String(), func(t *testing.T) {
				got := (&Redundant{}).Select(time.Time{}, tc.paths, Work{Class: c, Priority: c == ClassPriority, Size: pkt}, nil)
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			})
		}
	}
}
