package trafficgen

import (
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/scheduler"
)

// Announcer is implemented by connections that pass announcements of
// periodic priority sources to their path scheduler (package scheduler's
// Source): the reservations of the CWR schedulers.
type Announcer interface {
	AnnounceSource(s scheduler.Source)
	WithdrawSource(id uint64)
}

// SenderSide says which end of the connection sends a kind's messages:
// the server sends periodic messages and bulk data (as in the paper),
// the client requests, frames and publishes.
func SenderSide(kind string) string {
	switch kind {
	case experiment.KindPeriodic, experiment.KindBulk:
		return "server"
	}
	return "client"
}

// Start starts the sources of the experiment that this peer sends. It is
// called when the peer's connection can carry them (the server's once it
// accepted the connection, the client's once connected): each source's
// start and stop count from then, not from the experiment's time zero t0,
// so no message falls due while the handshake is under way and none is
// generated late in a burst when it ends. The sources' indexes in srcs
// identify them in message headers. They generate messages within the
// recorder's window [t0, Recorder.End()) only, however late Stop comes:
// the real-time backends stop the peers once the end has passed on the
// wall clock, when a message due at the end may already be due; and Stop
// generates the messages due before the end whose timers were late
// (recording how late: MessageRecord.Due).
func (p *Peer) Start(srcs []experiment.Source, t0 time.Time) {
	ready := p.env.Now()
	if ready.Before(t0) {
		ready = t0
	}
	for i, s := range srcs {
		if SenderSide(s.Kind) != p.side {
			continue
		}
		switch s.Kind {
		case experiment.KindPeriodic:
			p.periodic(i, s, ready, 1)
		case experiment.KindRequestResponse, experiment.KindFrames:
			p.periodic(i, s, ready, uint32(s.ReplySize))
		case experiment.KindBulk:
			p.after(ready.Add(s.Start), func() { p.bulk(i, s, ready) })
		case experiment.KindFile:
			p.after(ready.Add(s.Start), func() { p.sequential(i, s, ready, 0) })
		case experiment.KindStopAndWait:
			p.after(ready.Add(s.Start), func() { p.sequential(i, s, ready, 0) })
		}
	}
}

// after runs f at time at (now if past), cancelled by Stop.
func (p *Peer) after(at time.Time, f func()) {
	cancel := p.env.AfterFunc(max(0, at.Sub(p.env.Now())), func() {
		if !p.stopped {
			f()
		}
	})
	p.closers = append(p.closers, func() { cancel() })
}

// stopAt is when source s ends: at its stop time (counted from origin,
// when the source's peer started) or at the end of the experiment,
// whichever is first (zero: when the peer stops).
func (p *Peer) stopAt(s experiment.Source, origin time.Time) time.Time {
	end := p.rec.End()
	if s.Stop > 0 && (end.IsZero() || origin.Add(s.Stop).Before(end)) {
		return origin.Add(s.Stop)
	}
	return end
}

// periodic generates a message of s.Size bytes every s.Interval from
// origin+s.Start, each answered with reply bytes. Message k is due at
// start+k*interval (no drift) and created when its timer fires: then in
// the simulator, later on a loaded real-time event loop (the record's
// Due keeps the difference). A periodic priority source announces each
// next message to the path scheduler.
func (p *Peer) periodic(idx int, s experiment.Source, origin time.Time, reply uint32) {
	first := origin.Add(s.Start)
	end := p.stopAt(s, origin)
	ann, _ := p.conn.(Announcer)
	if !s.Announce {
		ann = nil
	}
	var k uint32
	var cancel func() bool
	var fire func()
	// due reports whether message k is part of the source.
	due := func() (time.Time, bool) {
		at := first.Add(time.Duration(k) * s.Interval)
		return at, (end.IsZero() || at.Before(end)) && (s.Count <= 0 || int(k) < s.Count)
	}
	schedule := func() {
		at, ok := due()
		if !ok {
			if ann != nil {
				ann.WithdrawSource(uint64(idx))
			}
			return
		}
		if ann != nil {
			ann.AnnounceSource(scheduler.Source{ID: uint64(idx), Size: int(s.Size), Interval: s.Interval, Next: at})
		}
		cancel = p.env.AfterFunc(max(0, at.Sub(p.env.Now())), fire)
	}
	fire = func() {
		if p.stopped {
			return
		}
		at, _ := due()
		p.generate(idx, s, k, at, uint64(s.Size), reply, nil)
		k++
		schedule()
	}
	p.closers = append(p.closers, func() {
		if cancel != nil && cancel() {
			// The timer of a message due by now, before the end,
			// had not fired (a late timer of a real-time backend):
			// it and any due after it by now are generated now.
			now := p.env.Now()
			for at, ok := due(); ok && !at.After(now); at, ok = due() {
				p.generate(idx, s, k, at, uint64(s.Size), reply, nil)
				k++
			}
		}
		if ann != nil {
			ann.WithdrawSource(uint64(idx))
		}
	})
	schedule()
}

// generate creates message seq of source idx, due at due, and sends it.
func (p *Peer) generate(idx int, s experiment.Source, seq uint32, due time.Time, length uint64, reply uint32, done func(*MessageRecord)) *MessageRecord {
	now := p.env.Now()
	replyPrio := s.ReplyPriority
	rec := p.rec.generated(idx, seq, now, length, reply, s.Priority, replyPrio)
	rec.Due = due
	var flags uint8
	if s.Priority {
		flags |= FlagPriority
	}
	if replyPrio {
		flags |= FlagReplyPriority
	}
	p.send(&outMessage{
		hdr:           Header{Source: uint16(idx), Flags: flags, Seq: seq, Length: length, Reply: reply, Created: now},
		priority:      s.Priority,
		replyPriority: replyPrio,
		rec:           rec,
		done:          done,
	})
	return rec
}

// sequential runs the file and stop-and-wait sources: one exchange at a
// time, the next after the previous one's reply (after s.Interval for
// files), up to s.Count. A file transfer is a request that is answered
// with the file; a stop-and-wait publish a message answered with one
// byte, given up after s.Timeout.
func (p *Peer) sequential(idx int, s experiment.Source, origin time.Time, seq uint32) {
	end := p.stopAt(s, origin)
	if p.stopped || s.Count > 0 && int(seq) >= s.Count || !end.IsZero() && !p.env.Now().Before(end) {
		return
	}
	var next func(*MessageRecord)
	length, reply := uint64(s.Size), uint32(1)
	if s.Kind == experiment.KindFile {
		length, reply = HeaderLen, uint32(s.Size)
	}
	advanced := false
	advance := func() {
		if advanced {
			return
		}
		advanced = true
		if s.Kind == experiment.KindFile && s.Interval > 0 {
			p.after(p.env.Now().Add(s.Interval), func() { p.sequential(idx, s, origin, seq+1) })
			return
		}
		p.sequential(idx, s, origin, seq+1)
	}
	next = func(*MessageRecord) { advance() }
	rec := p.generate(idx, s, seq, p.env.Now(), length, reply, next)
	if s.Kind == experiment.KindStopAndWait && s.Timeout > 0 {
		// The timeout runs on in the drain period.
		p.env.AfterFunc(s.Timeout, func() {
			if !rec.Done() {
				p.rec.failWith(rec, FailTimeout)
				advance()
			}
		})
	}
}

// bulk keeps a stream of background data backlogged: it writes whenever
// the stream takes more, until the source stops, which resets the stream
// (or s.Size bytes, if set, after which the stream ends).
func (p *Peer) bulk(idx int, s experiment.Source, origin time.Time) {
	st, err := p.conn.OpenStream()
	if err != nil {
		p.rec.protocolError(err)
		return
	}
	st.SetPriority(s.Priority)
	flags := uint8(FlagBulk)
	if s.Priority {
		flags |= FlagPriority
	}
	h := Header{Source: uint16(idx), Flags: flags, Length: uint64(s.Size), Created: p.env.Now()}
	hdr := h.Append(nil)
	var written uint64
	limit := uint64(s.Size)
	if limit > 0 {
		limit += HeaderLen
	}
	done := false
	write := func() {
		for !done && !p.stopped {
			n, want, err := p.writeNext(st, hdr, written, limit)
			written += uint64(n)
			if err != nil {
				done = true
				return
			}
			if limit > 0 && written >= limit {
				done = true
				st.Close()
				return
			}
			if n < want {
				return
			}
		}
	}
	st.OnWritable(write)
	st.OnReadable(func() {
		for {
			n, err := st.Read(p.buf)
			if err != nil || n == 0 {
				return
			}
		}
	})
	reset := func() {
		if !done {
			done = true
			st.CancelWrite(0)
		}
	}
	if end := p.stopAt(s, origin); !end.IsZero() {
		p.after(end, reset)
	}
	// The source ends with the experiment too.
	p.closers = append(p.closers, reset)
	write()
}
