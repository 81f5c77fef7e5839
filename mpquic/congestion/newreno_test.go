package congestion

import (
	"testing"
	"time"
)

var t0 = time.Unix(1000, 0)

const mds = 1350

func ack(r Controller, at time.Time, sent time.Time, n int, prior uint64) {
	ps := make([]AckedPacket, n)
	for i := range ps {
		ps[i] = AckedPacket{Number: uint64(i), TimeSent: sent, Size: mds}
	}
	r.OnAck(at, ps, prior, RTT{})
}

func TestNewRenoInitialWindow(t *testing.T) {
	tests := []struct {
		mds, want int
	}{
		{1200, 12000}, {1350, 13500}, {1500, 14720}, {9000, 18000},
	}
	for _, tc := range tests {
		r := NewNewReno(Config{MaxDatagramSize: tc.mds}, false)
		if r.Window() != uint64(tc.want) {
			t.Errorf("mds %d: initial window %d, want %d", tc.mds, r.Window(), tc.want)
		}
		if r.State() != SlowStart {
			t.Errorf("state %v", r.State())
		}
	}
}

func TestNewRenoSlowStartAndAvoidance(t *testing.T) {
	r := NewNewReno(Config{MaxDatagramSize: mds}, false)
	ack(r, t0, t0, 10, 10*mds)
	if r.Window() != 20*mds {
		t.Fatalf("slow start: window %d, want %d", r.Window(), 20*mds)
	}
	// A loss halves the window.
	r.OnCongestionEvent(t0.Add(time.Second), t0.Add(time.Second/2))
	if r.Window() != 10*mds || r.SlowStartThreshold() != 10*mds || r.State() != Recovery {
		t.Fatalf("after loss: window %d ssthresh %d state %v", r.Window(), r.SlowStartThreshold(), r.State())
	}
	// A second loss of a packet sent before recovery began changes nothing.
	r.OnCongestionEvent(t0.Add(2*time.Second), t0.Add(time.Second/2))
	if r.Window() != 10*mds {
		t.Fatalf("second loss in recovery: window %d", r.Window())
	}
	// ACKs of packets sent before recovery neither grow nor end it.
	ack(r, t0.Add(2*time.Second), t0.Add(time.Second/2), 5, 10*mds)
	if r.Window() != 10*mds || r.State() != Recovery {
		t.Fatalf("ack in recovery: window %d state %v", r.Window(), r.State())
	}
	// Congestion avoidance: exactly one datagram per window of acked bytes.
	sent := t0.Add(3 * time.Second)
	ack(r, t0.Add(4*time.Second), sent, 9, 10*mds)
	if r.Window() != 10*mds || r.State() != CongestionAvoidance {
		t.Fatalf("9/10 of a window: window %d state %v", r.Window(), r.State())
	}
	ack(r, t0.Add(4*time.Second), sent, 1, 10*mds)
	if r.Window() != 11*mds {
		t.Fatalf("one window acked: window %d, want %d", r.Window(), 11*mds)
	}
	// The next increase needs 11 more datagrams.
	ack(r, t0.Add(4*time.Second), sent, 10, 11*mds)
	if r.Window() != 11*mds {
		t.Fatalf("10 of 11: window %d", r.Window())
	}
	ack(r, t0.Add(4*time.Second), sent, 1, 11*mds)
	if r.Window() != 12*mds {
		t.Fatalf("11 of 11: window %d", r.Window())
	}
}

func TestNewRenoMinimumAndPersistent(t *testing.T) {
	r := NewNewReno(Config{MaxDatagramSize: mds}, false)
	for i := range 10 {
		at := t0.Add(time.Duration(i+1) * time.Second)
		r.OnCongestionEvent(at, at)
	}
	if r.Window() != 2*mds {
		t.Fatalf("window %d, want minimum %d", r.Window(), 2*mds)
	}
	r = NewNewReno(Config{MaxDatagramSize: mds}, false)
	ack(r, t0, t0, 30, 10*mds)
	r.OnPersistentCongestion(t0.Add(time.Second))
	if r.Window() != 2*mds {
		t.Fatalf("persistent congestion: window %d", r.Window())
	}
}

func TestNewRenoCwndLimited(t *testing.T) {
	tests := []struct {
		name  string
		cwl   bool
		prior uint64
		grows bool
	}{
		{"plain grows when app limited", false, 1 * mds, true},
		{"cwl: app limited does not grow", true, 1 * mds, false},
		{"cwl: half window in slow start grows", true, 5 * mds, true},
		{"cwl: full window grows", true, 10 * mds, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewNewReno(Config{MaxDatagramSize: mds}, tc.cwl)
			ack(r, t0, t0, 1, tc.prior)
			if grew := r.Window() > 10*mds; grew != tc.grows {
				t.Fatalf("grew %v, want %v", grew, tc.grows)
			}
			if tc.cwl && !tc.grows && r.State() != ApplicationLimited {
				t.Fatalf("state %v", r.State())
			}
		})
	}
}

// TestNewRenoCwndLimitedStartupOnly checks newreno-cwl-ss: an ACK that
// finds the sender application limited (1 datagram in flight of a window
// of 10) grows nothing in the initial slow start, as with newreno-cwl; once
// a congestion event set ssthresh (the window halved to 5 datagrams,
// congestion avoidance) the same ACK grows the window as with newreno: a
// window's worth of acknowledged bytes (5 datagrams) adds one datagram.
func TestNewRenoCwndLimitedStartupOnly(t *testing.T) {
	c, err := New("newreno-cwl-ss", Config{MaxDatagramSize: mds})
	if err != nil {
		t.Fatal(err)
	}
	r := c.(*NewReno)
	ack(r, t0, t0, 1, 1*mds)
	if w := r.Window(); w != 10*mds || r.State() != ApplicationLimited {
		t.Fatalf("slow start: window %d (want %d), state %v", w, 10*mds, r.State())
	}
	r.OnCongestionEvent(t0.Add(time.Second), t0.Add(time.Second/2))
	if w := r.Window(); w != 5*mds {
		t.Fatalf("after the loss: window %d, want %d", w, 5*mds)
	}
	at := t0.Add(2 * time.Second)
	ack(r, at, at, 5, 1*mds)
	if w := r.Window(); w != 6*mds {
		t.Fatalf("congestion avoidance: window %d, want %d", w, 6*mds)
	}
}

func TestRegistry(t *testing.T) {
	for _, n := range []string{"newreno", "newreno-cwl", "newreno-cwl-ss"} {
		if _, err := New(n, Config{MaxDatagramSize: 1200}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := New("bbr9", Config{MaxDatagramSize: 1200}); err == nil {
		t.Fatal("unknown controller accepted")
	}
	if _, err := New("newreno", Config{}); err == nil {
		t.Fatal("zero datagram size accepted")
	}
}

func TestPacer(t *testing.T) {
	p := NewPacer(1000, 0)
	p.SetRate(100_000, 100*time.Millisecond) // 1.25 MB/s
	if b := p.Budget(t0); b != BurstPackets*1000 {
		t.Fatalf("initial budget %d", b)
	}
	for range BurstPackets {
		p.OnPacketSent(t0, 1000)
	}
	if b := p.Budget(t0); b != 0 {
		t.Fatalf("budget after burst %d", b)
	}
	// 1000 bytes at 1.25 MB/s take 800 µs.
	if next := p.NextSendTime(t0, 1000); next.Sub(t0) != 800*time.Microsecond {
		t.Fatalf("next send after %v", next.Sub(t0))
	}
	if b := p.Budget(t0.Add(800 * time.Microsecond)); b != 1000 {
		t.Fatalf("budget after 800µs %d", b)
	}
	if b := p.Budget(t0.Add(time.Hour)); b != BurstPackets*1000 {
		t.Fatalf("budget capped at burst: %d", b)
	}
}

// TestPacerBurstInterval: with a burst interval the burst is what the rate
// carries in it, never less than BurstPackets datagrams, and follows the
// rate both ways; without one (0 or negative) it is BurstPackets
// datagrams at any rate. By hand, 1000-byte datagrams, 1 ms: at 1 MB/s a
// millisecond is 1000 bytes, the burst 10 datagrams (10,000 bytes); at
// 100 MB/s 100,000 bytes; SetRate(1 MB, 10 ms) is 1.25 x 100 MB/s,
// 125,000 bytes.
func TestPacerBurstInterval(t *testing.T) {
	for _, tc := range []struct {
		name     string
		interval time.Duration
		set      func(p *Pacer)
		want     uint64
	}{
		{"1 ms at 1 MB/s", time.Millisecond, func(p *Pacer) { p.SetBytesPerSecond(1_000_000) }, 10_000},
		{"1 ms at 100 MB/s", time.Millisecond, func(p *Pacer) { p.SetBytesPerSecond(100_000_000) }, 100_000},
		{"1 ms from the window", time.Millisecond, func(p *Pacer) { p.SetRate(1_000_000, 10*time.Millisecond) }, 125_000},
		// The burst saved at the high rate shrinks with the rate (the
		// budget read at the same instant).
		{"1 ms, rate down again", time.Millisecond, func(p *Pacer) {
			p.SetBytesPerSecond(100_000_000)
			p.Budget(t0.Add(2 * time.Hour))
			p.SetBytesPerSecond(1_000_000)
		}, 10_000},
		{"none at 100 MB/s", 0, func(p *Pacer) { p.SetBytesPerSecond(100_000_000) }, 10_000},
		{"negative at 100 MB/s", -time.Millisecond, func(p *Pacer) { p.SetBytesPerSecond(100_000_000) }, 10_000},
	} {
		p := NewPacer(1000, tc.interval)
		if b := p.Budget(t0); b != BurstPackets*1000 {
			t.Errorf("%s: initial budget %d", tc.name, b)
		}
		tc.set(p)
		if b := p.Budget(t0.Add(2 * time.Hour)); b != tc.want {
			t.Errorf("%s: burst %d, want %d", tc.name, b, tc.want)
		}
	}
}

// TestNewRenoGrowthPerRTT: with GrowthPerRTT, congestion avoidance adds
// one datagram per round trip in which anything was acknowledged (a round
// ends when a packet sent after it began is acknowledged), whatever part
// of the window the acknowledgements cover; with the default GrowthPerAck
// the same ACKs (a quarter window per round) add a datagram only every
// fourth round.
func TestNewRenoGrowthPerRTT(t *testing.T) {
	for _, tc := range []struct {
		growth Growth
		want   uint64
	}{{GrowthPerRTT, 28 * mds}, {GrowthPerAck, 21 * mds}, {"", 21 * mds}} {
		c, err := New("newreno", Config{MaxDatagramSize: mds, RenoGrowth: tc.growth})
		if err != nil {
			t.Fatal(err)
		}
		r := c.(*NewReno)
		r.cwnd, r.ssthresh = 20*mds, 20*mds
		// Eight rounds of 100 ms, each acknowledging 5 datagrams sent in
		// the round before.
		for i := 1; i <= 8; i++ {
			at := t0.Add(time.Duration(i) * 100 * time.Millisecond)
			ack(r, at, at.Add(-50*time.Millisecond), 5, 5*mds)
		}
		if r.Window() != tc.want {
			t.Errorf("growth %q: window %d datagrams, want %d", tc.growth, r.Window()/mds, tc.want/mds)
		}
	}
	if _, err := New("cubic", Config{MaxDatagramSize: mds, RenoGrowth: GrowthPerRTT}); err == nil {
		t.Error("cubic took per-rtt growth")
	}
	if _, err := New("newreno", Config{MaxDatagramSize: mds, RenoGrowth: "per-sec"}); err == nil {
		t.Error("an unknown growth was taken")
	}
}
