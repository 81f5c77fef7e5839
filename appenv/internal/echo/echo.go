// Package echo is a tiny request-response application written once against
// package appenv: the client sends messages, each on its own stream,
// and the server echoes every stream back. It exists to show and test that
// the same application code runs in the simulator and over sockets.
package echo

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/mpq/mpq/appenv"
)

// Serve echoes every stream of every connection accepted on addr: it
// writes back what it reads and closes the stream after the peer's FIN.
func Serve(e appenv.Env, addr string) (appenv.Listener, error) {
	return e.Listen(addr, func(c appenv.Conn) {
		c.OnStream(func(s appenv.Stream) {
			ec := &echoer{s: s, buf: make([]byte, 16<<10)}
			s.OnWritable(ec.pump)
			s.OnReadable(ec.pump)
		})
	})
}

// echoer copies one stream back to itself.
type echoer struct {
	s         appenv.Stream
	buf, out  []byte
	eof, done bool
}

func (ec *echoer) pump() {
	for !ec.done {
		if len(ec.out) > 0 {
			n, err := ec.s.Write(ec.out)
			ec.out = ec.out[n:]
			if err != nil {
				ec.done = true
				ec.s.CancelRead(1)
				return
			}
			if len(ec.out) > 0 {
				return // OnWritable resumes
			}
			continue
		}
		if ec.eof {
			ec.s.Close()
			ec.done = true
			return
		}
		n, err := ec.s.Read(ec.buf)
		ec.out = ec.buf[:n]
		switch {
		case errors.Is(err, io.EOF):
			ec.eof = true
		case err != nil:
			ec.done = true
			ec.s.CancelWrite(1)
			return
		case n == 0:
			return // OnReadable resumes
		}
	}
}

// Config describes the client's exchanges.
type Config struct {
	// Addr is the server's address.
	Addr string
	// Sizes are the sizes of the messages, one exchange (stream) each.
	Sizes []int
	// Interval separates the starts of consecutive exchanges; 0 starts
	// them all at once.
	Interval time.Duration
	// Timeout bounds each exchange; 0 means none.
	Timeout time.Duration
}

// Result is the outcome of one exchange; times count from the Run call.
type Result struct {
	Size       int
	Start, End time.Duration
	Err        error
}

// ErrTimeout is the error of an exchange that exceeded Config.Timeout.
var ErrTimeout = errors.New("echo: timeout")

// Run connects to cfg.Addr and runs the exchanges; done runs on the loop
// with one result per message once all ended (or with the error of the
// connection attempt). The connection is closed at the end.
func Run(e appenv.Env, cfg Config, done func([]Result, error)) {
	t0 := e.Now()
	e.Dial(cfg.Addr, func(c appenv.Conn, err error) {
		if err != nil {
			done(nil, err)
			return
		}
		r := &run{e: e, c: c, cfg: cfg, t0: t0, done: done, results: make([]Result, len(cfg.Sizes))}
		c.OnClosed(r.closed)
		for i, size := range cfg.Sizes {
			r.results[i].Size = size
			e.AfterFunc(time.Duration(i)*cfg.Interval, func() { r.start(i) })
		}
		if len(cfg.Sizes) == 0 {
			r.finish()
		}
	})
}

type run struct {
	e        appenv.Env
	c        appenv.Conn
	cfg      Config
	t0       time.Time
	done     func([]Result, error)
	results  []Result
	ended    int
	finished bool
}

// pattern is the content of message i at offset off.
func pattern(i, off int) byte { return byte(i*131 + off*7 + off>>9) }

// start begins exchange i: write the message and its FIN, read the echo.
func (r *run) start(i int) {
	if r.finished {
		return
	}
	res := &r.results[i]
	res.Start = r.e.Now().Sub(r.t0)
	s, err := r.c.OpenStream()
	if err != nil {
		res.Err = err
		r.end(i, nil)
		return
	}
	x := &exchange{r: r, i: i, s: s, size: res.Size, buf: make([]byte, 16<<10)}
	if r.cfg.Timeout > 0 {
		x.cancelTimeout = r.e.AfterFunc(r.cfg.Timeout, func() {
			s.CancelWrite(2)
			s.CancelRead(2)
			x.fail(ErrTimeout)
		})
	}
	s.OnWritable(x.write)
	s.OnReadable(x.read)
	x.write()
}

// end records the end of exchange i and finishes the run after the last.
func (r *run) end(i int, cancelTimeout func() bool) {
	if cancelTimeout != nil {
		cancelTimeout()
	}
	r.results[i].End = r.e.Now().Sub(r.t0)
	r.ended++
	if r.ended == len(r.results) {
		r.finish()
	}
}

func (r *run) finish() {
	if r.finished {
		return
	}
	r.finished = true
	r.c.Close(0, "done")
	r.done(r.results, nil)
}

// closed fails the exchanges still running when the connection ends early.
func (r *run) closed(err error) {
	if r.finished {
		return
	}
	for i := range r.results {
		if r.results[i].End == 0 && r.results[i].Err == nil {
			r.results[i].Err = fmt.Errorf("echo: connection closed: %w", err)
			r.results[i].End = r.e.Now().Sub(r.t0)
		}
	}
	r.finished = true
	r.done(r.results, nil)
}

// exchange is one message and its echo.
type exchange struct {
	r             *run
	i             int
	s             appenv.Stream
	size          int
	sent, got     int
	closed, ended bool
	buf           []byte
	cancelTimeout func() bool
}

func (x *exchange) write() {
	for !x.ended && x.sent < x.size {
		n := min(len(x.buf), x.size-x.sent)
		for k := range n {
			x.buf[k] = pattern(x.i, x.sent+k)
		}
		w, err := x.s.Write(x.buf[:n])
		x.sent += w
		if err != nil {
			x.fail(err)
			return
		}
		if w < n {
			return // OnWritable resumes
		}
	}
	if !x.ended && !x.closed {
		x.closed = true
		x.s.Close()
	}
}

func (x *exchange) read() {
	var b [16 << 10]byte
	for !x.ended {
		n, err := x.s.Read(b[:])
		for k := range n {
			if b[k] != pattern(x.i, x.got+k) {
				x.fail(fmt.Errorf("echo: message %d differs at byte %d", x.i, x.got+k))
				return
			}
		}
		x.got += n
		switch {
		case errors.Is(err, io.EOF):
			if x.got != x.size {
				x.fail(fmt.Errorf("echo: message %d: %d bytes echoed of %d", x.i, x.got, x.size))
				return
			}
			x.ended = true
			x.r.end(x.i, x.cancelTimeout)
			return
		case err != nil:
			x.fail(err)
			return
		case n == 0:
			return // OnReadable resumes
		}
	}
}

func (x *exchange) fail(err error) {
	if x.ended {
		return
	}
	x.ended = true
	x.r.results[x.i].Err = err
	x.r.end(x.i, x.cancelTimeout)
}
