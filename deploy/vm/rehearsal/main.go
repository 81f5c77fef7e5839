// Command rehearsal is the host's and the nodes' helper of
// deploy/vm/rehearse, the CloudLab rehearsal in three QEMU machines. It is
// not part of what a node runs on CloudLab: it stands in for the
// testbed's control network.
//
//	rehearsal serve PROXYDIR SHAREDIR
//
// serves one HTTP connection on standard input and output (QEMU's
// guestfwd starts it for each connection a node opens to the control
// address): GET /mod/... from PROXYDIR (a Go module cache's
// cache/download, which is a module proxy's layout), GET and PUT
// /share/NAME in SHAREDIR (how the nodes hand each other and the host
// their files), GET /time the host's clock in nanoseconds since 1970.
//
//	rehearsal clock URL [--step-ms X] [--freq-ppm F]
//
// runs on a node: it measures the node's clock against URL (the host's
// /time) with 48 requests on one connection, keeps the one of least
// round trip and prints {"offset_ms": node minus host, "rtt_ms", "at"}.
// With --step-ms it first steps the clock by what makes the node's clock
// the host's plus X ms, measures again and prints that; --freq-ppm sets
// the clock's frequency offset (a drift of F parts per million).
//
//	rehearsal report OUTDIR OFFSET_MS DRIFT_PPM REPEAT SEEDS [KEY=VALUE...]
//
// writes OUTDIR/rehearsal.json (see report.go).
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "serve":
		if len(os.Args) != 4 {
			usage()
		}
		err = serve(os.Stdin, os.Stdout, os.Args[2], os.Args[3])
	case "clock":
		err = clock(os.Args[2:])
	case "report":
		os.Exit(reportExit(os.Args[2:], os.Stderr))
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rehearsal:", err)
		os.Exit(1)
	}
}

// reportExit runs the report and returns its exit status: 0 held, 3 not
// held, 2 bad arguments, 1 could not tell; an error goes to stderr.
func reportExit(args []string, stderr io.Writer) int {
	rc, err := reportCmd(args)
	if err != nil {
		fmt.Fprintln(stderr, "rehearsal:", err)
		rc = max(rc, 1)
	}
	return rc
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: rehearsal serve PROXYDIR SHAREDIR | clock URL [--step-ms X] [--freq-ppm F] | report OUTDIR OFFSET_MS DRIFT_PPM REPEAT SEEDS [KEY=VALUE...]")
	os.Exit(2)
}

// stdioConn is standard input and output as a net.Conn.
type stdioConn struct {
	io.Reader
	io.Writer
	closed chan struct{}
	once   sync.Once
}

func (c *stdioConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

type addr struct{}

func (addr) Network() string { return "stdio" }
func (addr) String() string  { return "stdio" }

func (c *stdioConn) LocalAddr() net.Addr              { return addr{} }
func (c *stdioConn) RemoteAddr() net.Addr             { return addr{} }
func (c *stdioConn) SetDeadline(time.Time) error      { return nil }
func (c *stdioConn) SetReadDeadline(time.Time) error  { return nil }
func (c *stdioConn) SetWriteDeadline(time.Time) error { return nil }

// oneListener hands out its connection once, then waits for it to close.
type oneListener struct {
	c    *stdioConn
	done bool
}

func (l *oneListener) Addr() net.Addr { return addr{} }
func (l *oneListener) Close() error   { return nil }

// Accept returns the connection the first time, then waits until it is
// closed and reports the listener closed.
func (l *oneListener) Accept() (net.Conn, error) {
	if !l.done {
		l.done = true
		return l.c, nil
	}
	<-l.c.closed
	return nil, net.ErrClosed
}

// serve serves HTTP on the one connection of in and out (standard input
// and output) until it closes.
func serve(in io.Reader, out io.Writer, proxy, share string) error {
	c := &stdioConn{Reader: in, Writer: out, closed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("GET /mod/", http.StripPrefix("/mod/", http.FileServer(http.Dir(proxy))))
	mux.HandleFunc("GET /time", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, time.Now().UnixNano())
	})
	mux.HandleFunc("GET /share/{name}", func(w http.ResponseWriter, r *http.Request) {
		name, ok := shareName(share, r.PathValue("name"))
		if !ok {
			http.Error(w, "bad name", http.StatusBadRequest)
			return
		}
		http.ServeFile(w, r, name)
	})
	mux.HandleFunc("PUT /share/{name}", func(w http.ResponseWriter, r *http.Request) {
		name, ok := shareName(share, r.PathValue("name"))
		if !ok {
			http.Error(w, "bad name", http.StatusBadRequest)
			return
		}
		if err := put(name, r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	srv := &http.Server{Handler: mux, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed || s == http.StateHijacked {
			c.Close()
		}
	}}
	err := srv.Serve(&oneListener{c: c})
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

func shareName(dir, name string) (string, bool) {
	if name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, ".") {
		return "", false
	}
	return filepath.Join(dir, name), true
}

// put writes body to name through a temporary file.
func put(name string, body io.Reader) error {
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}

// sample is one measurement of the node's clock against the host's.
type sample struct {
	OffsetMS float64   `json:"offset_ms"`
	RTTMS    float64   `json:"rtt_ms"`
	At       time.Time `json:"at"`
}

// probes is how many requests a measurement takes: on a busy host most
// wait for a CPU somewhere on the way, and the least round trip is what
// bounds the error (half of it).
const probes = 48

func measure(client *http.Client, url string) (sample, error) {
	best := sample{RTTMS: math.Inf(1)}
	for i := 0; i < probes; i++ {
		t1 := time.Now()
		resp, err := client.Get(url)
		if err != nil {
			return best, err
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		t4 := time.Now()
		resp.Body.Close()
		if err != nil {
			return best, fmt.Errorf("%s: %v", url, err)
		}
		ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			return best, fmt.Errorf("%s: %q: %v", url, line, err)
		}
		rtt := t4.Sub(t1)
		if ms := float64(rtt) / 1e6; ms < best.RTTMS {
			mid := t1.UnixNano() + int64(rtt)/2
			best = sample{OffsetMS: float64(mid-ns) / 1e6, RTTMS: ms, At: t1}
		}
	}
	return best, nil
}

// Flags of adjtimex(2).
const (
	adjFrequency = 0x0002
	adjSetOffset = 0x0100
	adjNano      = 0x2000
)

// step moves the clock by d.
func step(d time.Duration) error {
	sec, nsec := int64(d/time.Second), int64(d%time.Second)
	if nsec < 0 {
		sec--
		nsec += int64(time.Second)
	}
	tx := syscall.Timex{Modes: adjSetOffset | adjNano}
	tx.Time.Sec, tx.Time.Usec = sec, nsec
	_, err := syscall.Adjtimex(&tx)
	return err
}

// setFreq sets the clock's frequency offset to ppm parts per million.
func setFreq(ppm float64) error {
	tx := syscall.Timex{Modes: adjFrequency, Freq: int64(math.Round(ppm * 65536))}
	_, err := syscall.Adjtimex(&tx)
	return err
}

func clock(args []string) error {
	fs := flag.NewFlagSet("clock", flag.ContinueOnError)
	stepMS := fs.String("step-ms", "", "make the clock the host's plus this many ms")
	freq := fs.Float64("freq-ppm", math.NaN(), "set the clock's frequency offset (ppm)")
	if len(args) < 1 {
		usage()
	}
	url := args[0]
	if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
		usage()
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	s, err := measure(client, url)
	if err != nil {
		return err
	}
	if *stepMS != "" {
		want, err := strconv.ParseFloat(*stepMS, 64)
		if err != nil {
			return fmt.Errorf("--step-ms %q: %v", *stepMS, err)
		}
		if err := step(time.Duration((want - s.OffsetMS) * 1e6)); err != nil {
			return fmt.Errorf("step: %v", err)
		}
		if s, err = measure(client, url); err != nil {
			return err
		}
	}
	if !math.IsNaN(*freq) {
		if err := setFreq(*freq); err != nil {
			return fmt.Errorf("frequency: %v", err)
		}
	}
	return json.NewEncoder(os.Stdout).Encode(s)
}
