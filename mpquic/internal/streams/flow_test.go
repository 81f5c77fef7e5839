package streams

import (
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/qerr"
)

func TestConnSendFlow(t *testing.T) {
	type step struct {
		consume, maxData uint64
		wantRaised       bool
		wantCredit       uint64
		wantBlocked      uint64
		wantBlockedOK    bool
	}
	tests := []struct {
		name  string
		init  uint64
		steps []step
	}{
		{"consume to the limit", 100, []step{
			{consume: 40, wantCredit: 60},
			{consume: 60, wantCredit: 0, wantBlocked: 100, wantBlockedOK: true},
			{maxData: 50, wantCredit: 0, wantBlocked: 100, wantBlockedOK: true}, // lower: ignored
			{maxData: 100, wantCredit: 0, wantBlocked: 100, wantBlockedOK: true},
			{maxData: 150, wantRaised: true, wantCredit: 50},
			{consume: 50, wantCredit: 0, wantBlocked: 150, wantBlockedOK: true},
		}},
		{"zero limit", 0, []step{
			{wantCredit: 0, wantBlocked: 0, wantBlockedOK: true},
			{maxData: 10, wantRaised: true, wantCredit: 10},
		}},
		{"overcharged", 10, []step{
			{consume: 20, wantCredit: 0, wantBlocked: 10, wantBlockedOK: true},
			{maxData: 15, wantRaised: true, wantCredit: 0, wantBlocked: 15, wantBlockedOK: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Stored by value in a struct, as the connection does.
			var holder struct{ f ConnSendFlow }
			holder.f = NewConnSendFlow(tt.init)
			for i, s := range tt.steps {
				holder.f.Consume(s.consume)
				raised := false
				if s.maxData > 0 {
					raised = holder.f.OnMaxData(s.maxData)
				}
				lim, ok := holder.f.BlockedAt()
				if raised != s.wantRaised || holder.f.Credit() != s.wantCredit || lim != s.wantBlocked || ok != s.wantBlockedOK {
					t.Fatalf("step %d: raised %v credit %d blocked %d %v", i, raised, holder.f.Credit(), lim, ok)
				}
			}
		})
	}
	var zero ConnSendFlow
	if zero.Credit() != 0 {
		t.Fatal("zero value has credit")
	}
}

func TestConnRecvFlow(t *testing.T) {
	t0 := time.Unix(50, 0)
	ms := time.Millisecond
	type step struct {
		received, consumed uint64
		wantErr            bool
		at, srtt           time.Duration
		wantOK             bool
		wantLimit          uint64
	}
	tests := []struct {
		name           string
		window, maxWin uint64
		steps          []step
	}{
		{"limit and half window", 100, 100, []step{
			{received: 60, wantLimit: 100},
			{received: 41, wantErr: true, wantLimit: 100},
			{received: 40, consumed: 50, wantLimit: 100},
			{consumed: 1, wantOK: true, wantLimit: 151},
			{received: 51, wantLimit: 151},
			{received: 1, wantErr: true, wantLimit: 151},
		}},
		{"over-consumption is capped", 100, 100, []step{
			{received: 10, consumed: 1000, wantLimit: 100},
			{received: 50, consumed: 50, wantOK: true, wantLimit: 160},
		}},
		{"auto-tuning", 100, 300, []step{
			{received: 100, consumed: 60, srtt: 10 * ms, wantOK: true, wantLimit: 160},
			{received: 60, consumed: 60, at: 5 * ms, srtt: 10 * ms, wantOK: true, wantLimit: 320},
			{received: 160, consumed: 160, at: 10 * ms, srtt: 10 * ms, wantOK: true, wantLimit: 580},
			{received: 260, consumed: 260, at: 100 * ms, srtt: 10 * ms, wantOK: true, wantLimit: 840},
		}},
		{"overflowing counts", 100, 100, []step{
			{received: 1<<64 - 1, wantErr: true, wantLimit: 100},
			{received: 100, wantLimit: 100},
			{received: 1<<64 - 1, wantErr: true, wantLimit: 100},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var holder struct{ f ConnRecvFlow }
			holder.f = NewConnRecvFlow(tt.window, tt.maxWin)
			for i, s := range tt.steps {
				err := holder.f.OnReceived(s.received)
				if (err != nil) != s.wantErr || err != nil && !isTransportErr(qerr.FlowControlError)(err) {
					t.Fatalf("step %d: OnReceived(%d) = %v", i, s.received, err)
				}
				holder.f.OnConsumed(s.consumed)
				lim, ok := holder.f.WindowUpdate(t0.Add(s.at), s.srtt)
				if ok != s.wantOK || ok && lim != s.wantLimit || holder.f.Limit() != s.wantLimit {
					t.Fatalf("step %d: WindowUpdate = %d, %v; Limit %d; want %d, %v", i, lim, ok, holder.f.Limit(), s.wantLimit, s.wantOK)
				}
			}
		})
	}
}

// TestSetMax: the limits of a rejected 0-RTT's new parameters replace the
// remembered ones, lower ones too, unless more was already sent.
func TestSetMax(t *testing.T) {
	for _, tt := range []struct {
		name       string
		sent, max  uint64
		ok         bool
		wantCredit uint64
	}{
		{"lower, above sent", 300, 500, true, 200},
		{"lower, at sent", 300, 300, true, 0},
		{"below sent", 300, 299, false, 700},
		{"higher", 300, 2000, true, 1700},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := NewConnSendFlow(1000)
			f.Consume(tt.sent)
			if ok := f.SetMax(tt.max); ok != tt.ok || f.Credit() != tt.wantCredit {
				t.Errorf("conn: SetMax(%d) = %v, credit %d; want %v, %d", tt.max, ok, f.Credit(), tt.ok, tt.wantCredit)
			}
			s := NewSendStream(0, 1000, 1<<20)
			s.Write(make([]byte, tt.sent))
			if c, _ := s.NextChunk(int(tt.sent), 1<<20); len(c.Data) != int(tt.sent) {
				t.Fatalf("sent %d, want %d", len(c.Data), tt.sent)
			}
			s.Write(make([]byte, 5000))
			if ok := s.SetMaxStreamData(tt.max); ok != tt.ok || s.PendingBytes(1<<20) != tt.wantCredit {
				t.Errorf("stream: SetMaxStreamData(%d) = %v, pending %d; want %v, %d", tt.max, ok, s.PendingBytes(1<<20), tt.ok, tt.wantCredit)
			}
		})
	}
}

// TestConnRecvEnsureWindow: EnsureWindow grows the connection's window
// to what a stream's needs (within the maximum, never shrinking it), and
// the next update advertises consumed + that window without auto-tuning
// doubling it, though the last update was within 2 srtt. A 48 KiB
// window updated at 32 KiB consumed (limit 80 KiB); ensured to 96 KiB,
// 40 KiB consumed 10 ms later (srtt 50 ms): the limit becomes 40 + 96 =
// 136 KiB (auto-tuning alone would have doubled the window to 192).
func TestConnRecvEnsureWindow(t *testing.T) {
	const srtt = 50 * time.Millisecond
	t0 := time.Unix(1000, 0)
	f := NewConnRecvFlow(48<<10, 24<<20)
	if err := f.OnReceived(48 << 10); err != nil {
		t.Fatal(err)
	}
	f.OnConsumed(32 << 10)
	if l, ok := f.WindowUpdate(t0, srtt); !ok || l != 80<<10 || f.Window() != 48<<10 {
		t.Fatalf("first update: limit %d (%v), window %d; want %d, %d", l, ok, f.Window(), 80<<10, 48<<10)
	}
	f.EnsureWindow(16 << 10) // smaller: unchanged
	if f.Window() != 48<<10 {
		t.Fatalf("window %d after ensuring less, want %d", f.Window(), 48<<10)
	}
	f.EnsureWindow(96 << 10)
	f.OnConsumed(8 << 10) // 40 KiB consumed, 10 ms later
	l, ok := f.WindowUpdate(t0.Add(10*time.Millisecond), srtt)
	if !ok || l != 136<<10 || f.Window() != 96<<10 {
		t.Fatalf("update after EnsureWindow: limit %d (%v), window %d; want %d, %d (not doubled)", l, ok, f.Window(), 136<<10, 96<<10)
	}
	f.EnsureWindow(64 << 20) // beyond the maximum
	if f.Window() != 24<<20 {
		t.Fatalf("window %d, want the maximum %d", f.Window(), 24<<20)
	}
}
