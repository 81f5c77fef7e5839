package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/mpq/mpq/scheduler"
)

// holdBackground is a path scheduler that never lets a packet of a stream
// without priority out (as cwr holds back background data beside a
// reservation) and sends everything else on the first path that can take
// it; skip is its answer to SkipsHeldBack.
type holdBackground struct{ skip bool }

func (h holdBackground) Name() string        { return fmt.Sprintf("test-hold-background-%v", h.skip) }
func (h holdBackground) SkipsHeldBack() bool { return h.skip }

func (holdBackground) Select(_ time.Time, paths []scheduler.PathInfo, w scheduler.Work, dst []uint64) []uint64 {
	if w.Class != scheduler.ClassControl && !w.Priority {
		return dst
	}
	for i := range paths {
		if paths[i].CanSend(w.Size) {
			return append(dst, paths[i].ID)
		}
	}
	return dst
}

// backgroundFirst is a stream scheduler that serves streams without
// priority first (as priority-fifo serves lost background data before
// priority data), frames STREAM frames a packet (0: as many as fit).
type backgroundFirst struct{ frames int }

func (b backgroundFirst) Name() string         { return fmt.Sprintf("test-background-first-%d", b.frames) }
func (b backgroundFirst) MaxStreamFrames() int { return b.frames }

func (backgroundFirst) Next(_ time.Time, streams []scheduler.StreamInfo) int {
	for i := range streams {
		if !streams[i].Priority {
			return i
		}
	}
	return 0
}

// TestSkipHeldBack: the stream scheduler serves a background stream first
// and the path scheduler holds it back. With SkipsHeldBack false the
// priority stream behind it waits with it (the stream scheduler's order
// is strict); with true the core offers the priority stream next and it
// is sent and acknowledged, but only if a packet carries one STREAM frame
// (else the held-back data would fill the rest of the packet).
func TestSkipHeldBack(t *testing.T) {
	for _, tc := range []struct {
		skip   bool
		frames int
		sent   bool
	}{
		{false, 1, false},
		{true, 1, true},
		{true, 0, false},
	} {
		t.Run(fmt.Sprintf("skip=%v,frames=%d", tc.skip, tc.frames), func(t *testing.T) {
			skip := tc.skip
			name := holdBackground{skip}.Name()
			scheduler.RegisterPath(name, func() scheduler.PathScheduler { return holdBackground{skip} })
			ss := backgroundFirst{tc.frames}
			scheduler.RegisterStream(ss.Name(), func() scheduler.StreamScheduler { return ss })
			cc, sc := testConfigs(t)
			sc.PathScheduler, sc.StreamScheduler = name, ss.Name()
			p := newPair(t, cc, sc, EndpointConfig{})
			p.handshake()
			bg, err := p.server.OpenStream(false)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bg.Write(make([]byte, 5000)); err != nil {
				t.Fatal(err)
			}
			bg.Close()
			pr, err := p.server.OpenStream(false)
			if err != nil {
				t.Fatal(err)
			}
			pr.SetPriority(true)
			if _, err := pr.Write(make([]byte, 3000)); err != nil {
				t.Fatal(err)
			}
			pr.Close()
			start := p.now
			for p.now.Sub(start) < time.Second && !pr.SendDone() && p.step() {
			}
			if pr.SendDone() != tc.sent {
				t.Fatalf("priority stream acknowledged: %v, want %v", pr.SendDone(), tc.sent)
			}
			if bg.SendDone() {
				t.Fatal("the held-back background stream was sent")
			}
		})
	}
}
