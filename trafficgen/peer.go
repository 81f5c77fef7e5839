package trafficgen

import (
	"errors"
	"io"
	"time"

	"github.com/mpq/mpq/appenv"
)

// zeros is the filler of message bodies and replies.
var zeros = make([]byte, 64<<10)

// Peer runs the generator at one end of a connection: it sends the
// messages of the sources it owns, each on a free stream of its own, and
// answers the messages the other end sends, each reply with the priority
// its message's header asks for. All its methods run on the environment's
// event loop.
type Peer struct {
	env  appenv.Env
	conn appenv.Conn
	rec  *Recorder
	side string
	// free lists our streams whose last message was answered, oldest
	// first; waiting lists messages that found no stream (the peer's
	// stream limit) in generation order.
	free    []*outStream
	waiting []*outMessage
	// stopped: the sources generate nothing more (Stop).
	stopped bool
	// closed: the connection has ended (Closed).
	closed bool
	buf    []byte
	// out is where a message's first write is put together with
	// WriteWhole: its header, then zeros (see chunk); made on first use.
	out []byte
	// closers stop the sources' timers and streams.
	closers []func()
	// WriteWhole writes a message's header and the rest of its first
	// 64 kB in one Write (see chunk), for transports that send each
	// Write at once: kernel TCP, TLS and MPTCP through bytemux, with
	// Nagle's algorithm off, send a segment (a TLS record) per Write, so
	// that a 64-byte message written in two went out as two segments.
	// QUIC's stream buffer packs the writes of one moment into one
	// packet, and QUIC runs keep the two writes (their results stay
	// those of before, byte for byte).
	WriteWhole bool
	// StreamPerMessage sends every message on a new stream and closes
	// the stream once the reply arrived, instead of reusing it
	// (transport.connection = "per-request", where each stream is a
	// connection of its own).
	StreamPerMessage bool
}

// NewPeer starts the generator's receiving side on conn and returns the
// peer, ready for sources to send from it. side is "server" or "client".
func NewPeer(e appenv.Env, conn appenv.Conn, rec *Recorder, side string) *Peer {
	p := &Peer{env: e, conn: conn, rec: rec, side: side, buf: make([]byte, 64<<10)}
	conn.OnStream(p.accept)
	conn.OnClosed(func(error) {
		p.closed = true
		// Messages waiting for a stream will not get one; those on
		// streams learn it from their streams.
		for _, m := range p.waiting {
			p.rec.failWith(m.rec, FailClosed)
		}
		p.waiting = nil
	})
	return p
}

// Closed reports whether the peer's connection has ended, closed by
// either end.
func (p *Peer) Closed() bool { return p.closed }

// otherSide is the end that is not side.
func otherSide(side string) string {
	if side == "server" {
		return "client"
	}
	return "server"
}

// Stop ends the peer's sources at the end of the experiment: nothing new
// is generated and bulk streams are reset. Messages already generated go
// on (the drain period): those waiting for a stream still get one, and
// replies are still read and written.
func (p *Peer) Stop() {
	p.stopped = true
	for _, f := range p.closers {
		f()
	}
	p.closers = nil
}

// outMessage is a message this peer sends.
type outMessage struct {
	hdr           Header
	priority      bool
	replyPriority bool
	rec           *MessageRecord
	// done runs when the reply is complete.
	done func(*MessageRecord)
}

// outStream is a stream this peer opened for its messages.
type outStream struct {
	p       *Peer
	s       appenv.Stream
	msg     *outMessage
	hdr     []byte // encoded header of msg
	written uint64 // bytes of msg written
	replied uint64 // reply bytes read
}

// send writes a message on a free stream, opening one if none is free; if
// the peer's stream limit prevents that, the message waits for a stream.
func (p *Peer) send(m *outMessage) {
	var os *outStream
	if len(p.free) > 0 {
		os = p.free[0]
		p.free = p.free[1:]
	} else {
		s, err := p.conn.OpenStream()
		if err != nil {
			if errors.Is(err, appenv.ErrStreamLimit) {
				p.waiting = append(p.waiting, m)
				m.rec.Queued = true
				return
			}
			p.rec.fail(m.rec, err)
			return
		}
		os = &outStream{p: p, s: s}
		s.OnReadable(os.readReply)
		s.OnWritable(os.write)
	}
	os.start(m)
}

func (os *outStream) start(m *outMessage) {
	os.msg, os.written, os.replied = m, 0, 0
	os.hdr = m.hdr.Append(os.hdr[:0])
	os.s.SetPriority(m.priority)
	m.rec.StreamID = os.s.ID()
	m.rec.Started = os.p.env.Now()
	os.write()
}

// write writes as much of the current message as the stream takes.
func (os *outStream) write() {
	m := os.msg
	if m == nil {
		return
	}
	for os.written < m.hdr.Length {
		n, want, err := os.p.writeNext(os.s, os.hdr, os.written, m.hdr.Length)
		os.written += uint64(n)
		if err != nil {
			os.p.rec.fail(m.rec, err)
			os.msg = nil
			return
		}
		if n < want {
			return // OnWritable resumes
		}
	}
	if m.rec.Written.IsZero() {
		m.rec.Written = os.p.env.Now()
	}
}

// chunk is what to write next of a message of length bytes (0: without
// end) whose header is hdr, written bytes of it written: the header's
// rest, then zeros up to 64 kB at a time. With WriteWhole the header's
// rest and the zeros after it come in one piece (up to 64 kB), valid
// until the next call (Write does not keep it).
func (p *Peer) chunk(hdr []byte, written, length uint64) []byte {
	if written < HeaderLen && !p.WriteWhole {
		return hdr[written:]
	}
	if written < HeaderLen {
		if p.out == nil {
			p.out = make([]byte, HeaderLen+len(zeros))
		}
		copy(p.out, hdr)
		end := uint64(len(p.out))
		if length > 0 {
			end = min(end, length)
		}
		return p.out[written:end]
	}
	if length == 0 {
		return zeros
	}
	return zeros[:min(uint64(len(zeros)), length-written)]
}

// writeNext writes on st the next chunk of a message (see chunk): the
// body's zeros with WriteZeros where st offers it (appenv.ZeroWriter),
// without their copies. It returns what the write returned and the
// chunk's length.
func (p *Peer) writeNext(st appenv.Stream, hdr []byte, written, length uint64) (n, want int, err error) {
	chunk := p.chunk(hdr, written, length)
	if written >= HeaderLen {
		n, err = writeZeros(st, chunk)
	} else {
		n, err = st.Write(chunk)
	}
	return n, len(chunk), err
}

// writeZeros writes zeros, a slice of zero bytes, on st: with WriteZeros
// where st offers it (appenv.ZeroWriter), without their copies.
func writeZeros(st appenv.Stream, zeros []byte) (int, error) {
	if zw, ok := st.(appenv.ZeroWriter); ok {
		return zw.WriteZeros(len(zeros))
	}
	return st.Write(zeros)
}

// readReply consumes the reply; a complete reply frees the stream.
func (os *outStream) readReply() {
	for {
		n, err := os.s.Read(os.p.buf)
		if m := os.msg; m != nil && n > 0 {
			os.replied += uint64(n)
			now := os.p.env.Now()
			os.p.rec.received(now, otherSide(os.p.side), classOf(m.replyPriority), int(m.hdr.Source), true, n)
			if os.replied >= uint64(m.hdr.Reply) {
				os.msg = nil
				os.p.rec.replied(m.rec, now)
				if os.p.StreamPerMessage {
					os.s.Close()
					os.p.next()
				} else {
					os.p.released(os)
				}
				if m.done != nil {
					m.done(m.rec)
				}
			}
		}
		if err != nil || n == 0 {
			if err != nil && os.msg != nil {
				os.p.rec.fail(os.msg.rec, err)
				os.msg = nil
			}
			return
		}
	}
}

// next sends the first message waiting for a stream, if any.
func (p *Peer) next() {
	if len(p.waiting) > 0 {
		m := p.waiting[0]
		p.waiting = p.waiting[1:]
		p.send(m)
	}
}

// released returns a stream to the pool or gives it to a waiting message.
func (p *Peer) released(os *outStream) {
	if len(p.waiting) > 0 {
		m := p.waiting[0]
		p.waiting = p.waiting[1:]
		os.start(m)
		return
	}
	p.free = append(p.free, os)
}

// inStream reads the messages the other end sends on one stream.
type inStream struct {
	p      *Peer
	s      appenv.Stream
	hdrBuf []byte
	hdr    Header
	inHdr  bool   // a header was parsed and its body is being read
	read   uint64 // bytes of the current message read
	bulk   bool
	class  int
	sender string // the end that sent the messages
	// got holds the Recorder's counters of sender once used.
	got gotCounts
	// reply still to write
	replyLeft uint64
}

func (p *Peer) accept(s appenv.Stream) {
	is := &inStream{p: p, s: s, sender: otherSide(p.side)}
	s.OnReadable(is.readable)
	s.OnWritable(is.writeReply)
}

func (is *inStream) readable() {
	d, _ := is.s.(appenv.Discarder)
	for {
		var n int
		var err error
		if is.bulk && d != nil {
			// The body of a bulk message is only counted: as Read
			// and consume, without the copy.
			n, err = d.Discard(len(is.p.buf))
			if n > 0 {
				is.p.rec.receivedInto(&is.got, is.p.env.Now(), is.sender, is.class, int(is.hdr.Source), false, n)
			}
		} else {
			n, err = is.s.Read(is.p.buf)
			if n > 0 {
				is.consume(is.p.buf[:n])
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && is.inHdr && !is.bulk {
				is.p.rec.receiveFailed(is.hdr, err)
			}
			return
		}
		if n == 0 {
			return
		}
	}
}

// consume parses received bytes into messages.
func (is *inStream) consume(b []byte) {
	now := is.p.env.Now()
	for len(b) > 0 {
		if is.bulk {
			is.p.rec.receivedInto(&is.got, now, is.sender, is.class, int(is.hdr.Source), false, len(b))
			return
		}
		if !is.inHdr {
			need := HeaderLen - len(is.hdrBuf)
			take := min(need, len(b))
			is.hdrBuf = append(is.hdrBuf, b[:take]...)
			b = b[take:]
			if len(is.hdrBuf) < HeaderLen {
				return
			}
			h, err := ParseHeader(is.hdrBuf)
			is.hdrBuf = is.hdrBuf[:0]
			if err != nil {
				is.s.CancelRead(1)
				is.p.rec.protocolError(err)
				return
			}
			is.hdr, is.inHdr, is.read = h, true, HeaderLen
			is.class = classOf(h.Flags&FlagPriority != 0)
			is.p.rec.received(now, is.sender, is.class, int(h.Source), false, HeaderLen)
			if h.Flags&FlagBulk != 0 {
				// The rest of the stream is the bulk body, only
				// counted (readable: Discard).
				is.bulk = true
				if d, ok := is.s.(appenv.Discarder); ok {
					d.Sink()
				}
				continue
			}
			if is.read == h.Length {
				is.complete(now)
			}
			continue
		}
		take := min(uint64(len(b)), is.hdr.Length-is.read)
		is.read += take
		b = b[take:]
		is.p.rec.received(now, is.sender, is.class, int(is.hdr.Source), false, int(take))
		if is.read == is.hdr.Length {
			is.complete(now)
		}
	}
}

// complete records a whole message and answers it on the stream, with the
// priority the message asks for.
func (is *inStream) complete(now time.Time) {
	is.inHdr = false
	is.p.rec.delivered(is.hdr, now)
	is.s.SetPriority(is.hdr.Flags&FlagReplyPriority != 0)
	is.replyLeft += uint64(is.hdr.Reply)
	is.writeReply()
}

func (is *inStream) writeReply() {
	for is.replyLeft > 0 {
		chunk := zeros[:min(uint64(len(zeros)), is.replyLeft)]
		n, err := writeZeros(is.s, chunk)
		is.replyLeft -= uint64(n)
		if err != nil || n < len(chunk) {
			return
		}
	}
}
