package recovery

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

var t0 = time.Unix(1000, 0)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// sendN sends packets first..first+n-1, one per millisecond from start.
func sendN(s *Space, first uint64, n int, start time.Time) {
	for i := 0; i < n; i++ {
		p := s.Prepare(first + uint64(i))
		p.TimeSent = start.Add(ms(i))
		p.Size = 1000
		p.AckEliciting = true
		p.InFlight = true
		p.Frames = append(p.Frames, FrameRef{Kind: 1, ID: first + uint64(i)})
		s.OnSent(p)
	}
}

func TestSpaceAckAndPacketThreshold(t *testing.T) {
	s := NewSpace()
	sendN(s, 0, 10, t0)
	if got := s.BytesInFlight(); got != 10000 {
		t.Fatalf("bytes in flight = %d, want 10000", got)
	}
	var acked []uint64
	res, err := s.OnAck([]Range{{Smallest: 5, Largest: 6}, {Smallest: 0, Largest: 1}}, func(p *SentPacket) {
		acked = append(acked, p.Number)
		if p.Frames[0].ID != p.Number {
			t.Errorf("frame ref of %d = %d", p.Number, p.Frames[0].ID)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint64{0, 1, 5, 6}; !equal(acked, want) {
		t.Fatalf("acked %v, want %v", acked, want)
	}
	if !res.LargestNewlyAcked || !res.LargestSentTime.Equal(t0.Add(ms(6))) || res.InFlightBytes != 4000 {
		t.Fatalf("result %+v", res)
	}
	var lost []uint64
	lr := s.DetectLost(t0.Add(ms(7)), ms(100), 0, time.Time{}, func(p *SentPacket, tr LossTrigger) {
		if tr != LossReordering {
			t.Errorf("trigger %v", tr)
		}
		lost = append(lost, p.Number)
	})
	// 2 and 3 are >= 3 below the largest acknowledged (6); 4 is not.
	if want := []uint64{2, 3}; !equal(lost, want) {
		t.Fatalf("lost %v, want %v", lost, want)
	}
	if lr.LostBytes != 2000 || !lr.LargestLostSentTime.Equal(t0.Add(ms(3))) {
		t.Fatalf("loss result %+v", lr)
	}
	if want := t0.Add(ms(4)).Add(ms(100)); !s.LossTime().Equal(want) {
		t.Fatalf("loss time %v, want %v", s.LossTime(), want)
	}
	if got := s.BytesInFlight(); got != 4000 { // 4, 7, 8, 9
		t.Fatalf("bytes in flight = %d, want 4000", got)
	}
	// The time threshold then catches packet 4.
	lost = lost[:0]
	s.DetectLost(t0.Add(ms(104)), ms(100), 0, time.Time{}, func(p *SentPacket, tr LossTrigger) {
		if tr != LossTime {
			t.Errorf("trigger %v", tr)
		}
		lost = append(lost, p.Number)
	})
	if !equal(lost, []uint64{4}) || !s.LossTime().IsZero() {
		t.Fatalf("lost %v, loss time %v", lost, s.LossTime())
	}
	// Duplicate ACK acknowledges nothing new.
	res, err = s.OnAck([]Range{{Smallest: 0, Largest: 6}}, func(p *SentPacket) { t.Errorf("re-acked %d", p.Number) })
	if err != nil || res.NewlyAcked {
		t.Fatalf("duplicate ack: %+v %v", res, err)
	}
}

func TestSpaceAckOfUnsentPacket(t *testing.T) {
	s := NewSpace()
	sendN(s, 0, 3, t0)
	_, err := s.OnAck([]Range{{Smallest: 0, Largest: 3}}, nil)
	var te *qerr.TransportError
	if !errors.As(err, &te) || te.Code != qerr.ProtocolViolation {
		t.Fatalf("err = %v, want PROTOCOL_VIOLATION", err)
	}
	if _, err := NewSpace().OnAck([]Range{{Largest: 0}}, nil); err == nil {
		t.Fatal("ack on an empty space accepted")
	}
}

func TestSpaceTrimAndGrow(t *testing.T) {
	s := NewSpace()
	const n = 1000
	sendN(s, 0, n, t0)
	for pn := uint64(0); pn < n; pn += 2 {
		if _, err := s.OnAck([]Range{{Smallest: pn, Largest: pn + 1}}, nil); err != nil {
			t.Fatal(err)
		}
		s.DetectLost(t0.Add(ms(n)), ms(10000), 0, time.Time{}, nil)
	}
	if s.count != 0 || s.BytesInFlight() != 0 || s.AckElicitingInFlight() {
		t.Fatalf("count %d inflight %d", s.count, s.BytesInFlight())
	}
	// Slots are reused after trimming.
	sendN(s, n, 10, t0)
	if s.count != 10 || s.lookup(n+3).Number != n+3 {
		t.Fatal("lookup after reuse failed")
	}
}

func TestSpaceSenderGap(t *testing.T) {
	s := NewSpace()
	sendN(s, 0, 2, t0)
	sendN(s, 5, 2, t0.Add(ms(2))) // numbers 2..4 never sent
	if _, err := s.OnAck([]Range{{Smallest: 5, Largest: 6}}, nil); err != nil {
		t.Fatal(err)
	}
	var lost []uint64
	s.DetectLost(t0.Add(ms(5)), ms(100), 0, time.Time{}, func(p *SentPacket, _ LossTrigger) { lost = append(lost, p.Number) })
	if !equal(lost, []uint64{0, 1}) {
		t.Fatalf("lost %v, want [0 1] (gap never reported)", lost)
	}
}

func TestPersistentCongestion(t *testing.T) {
	tests := []struct {
		name      string
		ackMiddle bool
		spacing   time.Duration
		firstRTT  time.Time
		want      bool
	}{
		{"long run", false, ms(100), t0.Add(-ms(1)), true},
		{"acks break the runs", true, ms(100), t0.Add(-ms(1)), false},
		{"too short", false, ms(10), t0.Add(-ms(1)), false},
		{"before first rtt sample", false, ms(100), t0.Add(ms(1000)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSpace()
			for i := 0; i < 6; i++ {
				p := s.Prepare(uint64(i))
				p.TimeSent = t0.Add(time.Duration(i) * tt.spacing)
				p.Size, p.AckEliciting, p.InFlight = 1000, true, true
				s.OnSent(p)
			}
			p := s.Prepare(6)
			p.TimeSent, p.Size, p.AckEliciting, p.InFlight = t0.Add(6*tt.spacing), 1000, true, true
			s.OnSent(p)
			ranges := []Range{{Smallest: 6, Largest: 6}}
			if tt.ackMiddle {
				ranges = append(ranges, Range{Smallest: 4, Largest: 4}, Range{Smallest: 2, Largest: 2})
			}
			if _, err := s.OnAck(ranges, nil); err != nil {
				t.Fatal(err)
			}
			// Duration 3 * PTO = 150ms; packets 0..5 span 5*spacing.
			res := s.DetectLost(t0.Add(7*tt.spacing), ms(1), ms(150), tt.firstRTT, nil)
			if res.PersistentCongestion != tt.want {
				t.Fatalf("persistent congestion = %v, want %v", res.PersistentCongestion, tt.want)
			}
		})
	}
}

func TestDiscard(t *testing.T) {
	s := NewSpace()
	sendN(s, 0, 4, t0)
	if b := s.Discard(); b != 4000 {
		t.Fatalf("discarded %d bytes", b)
	}
	if s.AckElicitingInFlight() || !s.LastAckElicitingTime().IsZero() || s.count != 0 {
		t.Fatal("state left after discard")
	}
}

func TestDeclareAllLost(t *testing.T) {
	s := NewSpace()
	sendN(s, 0, 4, t0)
	s.OnAck([]Range{{Smallest: 1, Largest: 1}}, nil)
	var lost []uint64
	if b := s.DeclareAllLost(func(p *SentPacket) { lost = append(lost, p.Number) }); b != 3000 {
		t.Fatalf("lost bytes %d", b)
	}
	if !equal(lost, []uint64{0, 2, 3}) || s.BytesInFlight() != 0 {
		t.Fatalf("lost %v", lost)
	}
}

func TestRTTUpdate(t *testing.T) {
	r := NewRTT(0)
	if r.Smoothed() != DefaultInitialRTT || r.Var() != DefaultInitialRTT/2 {
		t.Fatal("initial values")
	}
	r.Update(t0, ms(100), ms(10), -1)
	if r.Smoothed() != ms(100) || r.Var() != ms(50) || r.Min() != ms(100) {
		t.Fatalf("first sample: %v %v %v", r.Smoothed(), r.Var(), r.Min())
	}
	// ack delay 20ms is capped to max_ack_delay 10ms: adjusted 150-10 = 140.
	r.Update(t0, ms(150), ms(20), ms(10))
	wantS := (7*ms(100) + ms(140)) / 8
	wantV := (3*ms(50) + ms(40)) / 4
	if r.Smoothed() != wantS || r.Var() != wantV {
		t.Fatalf("second sample: %v %v, want %v %v", r.Smoothed(), r.Var(), wantS, wantV)
	}
	// An ack delay that would take the sample below min_rtt is not subtracted.
	r.Update(t0, ms(101), ms(5), -1)
	if r.Min() != ms(100) || r.Latest() != ms(101) {
		t.Fatal("min/latest")
	}
	wantS2 := (7*wantS + ms(101)) / 8
	if r.Smoothed() != wantS2 {
		t.Fatalf("third: %v want %v", r.Smoothed(), wantS2)
	}
	if got, want := r.PTO(ms(25)), r.Smoothed()+4*r.Var()+ms(25); got != want {
		t.Fatalf("PTO %v want %v", got, want)
	}
	d := max(r.Smoothed(), r.Latest())
	if got := r.LossDelay(); got != d+d/8 {
		t.Fatalf("loss delay %v", got)
	}
}

// TestRTTExtremeAckDelay checks that ack delays at the edges of the
// Duration range (a peer's ACK Delay field reaches 2^62-1 units) neither
// overflow nor inflate the estimate: they are capped or not subtracted.
func TestRTTExtremeAckDelay(t *testing.T) {
	tests := []struct {
		name        string
		ackDelay    time.Duration
		maxAckDelay time.Duration
		wantAdj     time.Duration // the adjusted sample of latest 30ms
	}{
		{"largest delay, not capped", math.MaxInt64, -1, ms(30)},
		{"largest delay, capped", math.MaxInt64, ms(25), ms(30)}, // 30-25 < min 20
		{"large delay, capped to 5ms", math.MaxInt64, ms(5), ms(25)},
		{"negative delay", math.MinInt64, -1, ms(30)},
		{"negative delay, capped", -ms(5), ms(25), ms(30)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRTT(0)
			r.Update(t0, ms(20), 0, -1)
			r.Update(t0, ms(30), tt.ackDelay, tt.maxAckDelay)
			if want := (7*ms(20) + tt.wantAdj) / 8; r.Smoothed() != want {
				t.Fatalf("smoothed %v, want %v", r.Smoothed(), want)
			}
			if r.Var() <= 0 || r.PTO(ms(25)) <= 0 {
				t.Fatalf("rttvar %v, PTO %v", r.Var(), r.PTO(ms(25)))
			}
		})
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func BenchmarkSendAck(b *testing.B) {
	s := NewSpace()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		pn := uint64(i)
		p := s.Prepare(pn)
		p.TimeSent, p.Size, p.AckEliciting, p.InFlight = t0, 1200, true, true
		p.Frames = append(p.Frames, FrameRef{Kind: 1})
		s.OnSent(p)
		if i%2 == 1 {
			s.OnAck([]Range{{Smallest: pn - 1, Largest: pn}}, func(*SentPacket) {})
			s.DetectLost(t0, ms(10), 0, time.Time{}, nil)
		}
	}
}

func TestOldestUnackedAbove(t *testing.T) {
	t0 := time.Unix(0, 0)
	tests := []struct {
		name    string
		acked   []Range
		ackOnly map[uint64]bool // packets sent without an ack-eliciting frame
		wantPN  uint64
		wantOK  bool
	}{
		{"nothing acked: the oldest", nil, nil, 0, true},
		{"after the largest acked", []Range{{0, 3}}, nil, 4, true},
		{"a gap below the largest does not count", []Range{{5, 6}, {0, 2}}, nil, 7, true},
		{"ack-only packets are skipped", []Range{{0, 3}}, map[uint64]bool{4: true, 5: true}, 6, true},
		{"everything acked", []Range{{0, 9}}, nil, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpace()
			for pn := uint64(0); pn < 10; pn++ {
				p := s.Prepare(pn)
				p.TimeSent = t0.Add(ms(int(pn)))
				p.Size = 1000
				p.InFlight = true
				p.AckEliciting = !tc.ackOnly[pn]
				s.OnSent(p)
			}
			if tc.acked != nil {
				if _, err := s.OnAck(tc.acked, nil); err != nil {
					t.Fatal(err)
				}
			}
			pn, sent, ok := s.OldestUnackedAbove()
			if ok != tc.wantOK || ok && (pn != tc.wantPN || !sent.Equal(t0.Add(ms(int(tc.wantPN))))) {
				t.Fatalf("got %d %v %v, want %d %v", pn, sent, ok, tc.wantPN, tc.wantOK)
			}
		})
	}
}

func TestRTTRestart(t *testing.T) {
	r := NewRTT(333 * time.Millisecond)
	r.Restart() // no sample yet: nothing to restart from
	if r.Smoothed() != 333*time.Millisecond {
		t.Fatalf("restart without a sample changed srtt to %v", r.Smoothed())
	}
	now := time.Unix(0, 0)
	r.Update(now, ms(140), 0, -1)
	r.Update(now, ms(150), 0, -1)
	r.Update(now, ms(60), 0, -1)
	r.Restart()
	if r.Smoothed() != ms(60) || r.Min() != ms(60) || r.Var() != ms(30) || r.Latest() != ms(60) {
		t.Fatalf("after restart srtt %v min %v var %v latest %v, want 60, 60, 30, 60 ms", r.Smoothed(), r.Min(), r.Var(), r.Latest())
	}
}

// TestOldestUnackedAboveResumes checks the resumed scan of
// OldestUnackedAbove against a scan from the start, over a long random
// sequence of sends (some ack-only, some numbers skipped), acknowledgements
// and losses, calling it also between Prepare and OnSent.
func TestOldestUnackedAboveResumes(t *testing.T) {
	t0 := time.Unix(0, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	s := NewSpace()
	brute := func() (uint64, bool) {
		start := s.base
		if s.largestAcked >= 0 && uint64(s.largestAcked)+1 > start {
			start = uint64(s.largestAcked) + 1
		}
		for n := start; n < s.base+uint64(s.count); n++ {
			if p := s.at(int(n - s.base)); p.state == stateOutstanding && p.AckEliciting {
				return n, true
			}
		}
		return 0, false
	}
	check := func(step int) {
		want, wok := brute()
		got, _, ok := s.OldestUnackedAbove()
		if ok != wok || got != want {
			t.Fatalf("step %d: got %d %v, want %d %v", step, got, ok, want, wok)
		}
	}
	var pn uint64
	for step := 0; step < 20000; step++ {
		switch r := rng.IntN(10); {
		case r < 6: // send
			if rng.IntN(20) == 0 {
				pn++ // a skipped number
			}
			p := s.Prepare(pn)
			check(step) // between Prepare and OnSent
			p.TimeSent, p.Size, p.InFlight = t0.Add(time.Duration(pn)), 1000, true
			p.AckEliciting = rng.IntN(4) != 0
			s.OnSent(p)
			pn++
		case r < 9: // acknowledge a random range below the next number
			if pn == 0 {
				continue
			}
			hi := uint64(rng.IntN(int(pn)))
			lo := hi - min(hi, uint64(rng.IntN(8)))
			s.OnAck([]Range{{Smallest: lo, Largest: hi}}, nil)
		default: // lose what the time threshold says
			s.DetectLost(t0.Add(time.Duration(pn)), 5, 0, time.Time{}, func(*SentPacket, LossTrigger) {})
		}
		check(step)
	}
}
