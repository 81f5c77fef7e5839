package runner

import (
	"errors"
	"time"

	"github.com/mpq/mpq/trafficgen"
)

// MergeOptions changes what Merge does.
type MergeOptions struct {
	// CorrectClock moves the server's times into the client's clock
	// before the halves are joined, with the offset the client measured
	// (clock.json): the offset at a time is interpolated between the
	// measurements before and after the run (linearly: a clock that
	// drifts at a steady rate is followed), so that completion times
	// across the two hosts are the client's clock's throughout. The
	// correction is as exact as the offset: off by half the difference
	// of path 0's two directions' delays.
	CorrectClock bool
}

var errNoClock = errors.New("the client's half has no clock measurement to correct the server's times with")

// serverToClient returns the function that maps a server's time to the
// client's clock by c's offsets (server minus client), interpolated in
// the client's time between c.Start and c.End.
func serverToClient(c *ClockReport) func(time.Time) time.Time {
	off0 := time.Duration(c.Start.OffsetMS * float64(time.Millisecond))
	off1 := time.Duration(c.End.OffsetMS * float64(time.Millisecond))
	span := c.End.At.Sub(c.Start.At)
	return func(t time.Time) time.Time {
		if t.IsZero() {
			return t
		}
		off := off0
		if span > 0 {
			// The client's time, near enough to place t between the
			// measurements: the offset changes by microseconds over
			// the error this makes.
			f := float64(t.Add(-off0).Sub(c.Start.At)) / float64(span)
			off = off0 + time.Duration(f*float64(off1-off0))
		}
		return t.Add(-off)
	}
}

// correctClock moves every time of the server's half h that is the
// server's clock's into the client's: those of the messages it sent, the
// delivery (and what followed it) of those it received (whose creation
// is the client's), its path samples, events and growth spans, its
// start and its connection's.
func correctClock(h *trafficgen.Half, c *ClockReport) {
	to := serverToClient(c)
	h.Start = to(h.Start)
	h.ConnectStart = to(h.ConnectStart)
	for _, m := range h.Messages {
		if trafficgen.SenderSide(m.Kind) == h.Side {
			m.Created, m.Due = to(m.Created), to(m.Due)
		}
		m.Started, m.Written, m.Delivered, m.Replied = to(m.Started), to(m.Written), to(m.Delivered), to(m.Replied)
	}
	for i := range h.Samples {
		h.Samples[i].At = to(h.Samples[i].At)
	}
	for i := range h.PathEvents {
		h.PathEvents[i].At = to(h.PathEvents[i].At)
	}
	for i := range h.Growth {
		h.Growth[i].StartT, h.Growth[i].LastT = to(h.Growth[i].StartT), to(h.Growth[i].LastT)
	}
}
