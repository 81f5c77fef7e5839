// Command flood measures how an mpquic server holds under a flood of
// connection attempts: the server's resident memory and the time of a
// legitimate download, without load, during genuine ClientHellos at a rate,
// and during Initials of random bytes at a rate; optionally it then sends
// malformed datagrams of every kind and checks that the server still
// serves. It lives under testdata so that it is no part of the mpq binary
// or of "go test ./...":
//
//	go build -o /tmp/mpq ./cmd/mpq
//	/tmp/mpq serve --addr 127.0.0.1:4433 --root DIR &   # DIR/file: 2 MB
//	go run ./mpquic/testdata/flood --addr 127.0.0.1:4433 --pid $!
//
// --phases chooses the phases: noload, hello, garbage (the defaults),
// retry (ClientHellos that answer the server's Retry and go quiet, from
// 127.0.0.1; the legitimate client should then come from another /24:
// --local 127.0.1.1; 64 ClientHellos made at the start are sent again
// and again, each time as a new connection) and frozen (--frozen clients request --path and never
// read; the server's RSS is sampled while they hold and for 10 s after
// they close).
//
// --cpuprofile FILE profiles the tool itself, to tell its cost from the
// server's.
//
// It sends to loopback only, and every phase is bounded in time and rate.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mpq/mpq/internal/hq"
	"github.com/mpq/mpq/mpquic"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/mpquic/internal/floodgen"
)

// Bounds on what the tool may be asked to do.
const (
	maxPhase     = 5 * time.Minute
	maxRate      = 50_000
	maxMalformed = 1_000_000
	maxFrozen    = 2_000
)

type options struct {
	addr          netip.AddrPort
	pid           int
	path          string
	phase         time.Duration
	helloRate     int
	garbageRate   int
	ports         int
	downloadEvery time.Duration
	malformed     int
	malformedRate int
	out           string
	phases        map[string]bool
	retryRate     int
	local         string
	frozen        int
	cpuProfile    string
}

func main() {
	var o options
	addr := flag.String("addr", "127.0.0.1:4433", "the server's loopback UDP `address`")
	flag.IntVar(&o.pid, "pid", 0, "the server's process ID, for its resident memory (required)")
	flag.StringVar(&o.path, "path", "/file", "the `file` the legitimate client downloads")
	flag.DurationVar(&o.phase, "phase", time.Minute, "length of each phase (at most 5m)")
	flag.IntVar(&o.helloRate, "hello-rate", 1000, "genuine ClientHellos per second in the second phase")
	flag.IntVar(&o.garbageRate, "garbage-rate", 10_000, "Initials of random bytes per second in the third phase")
	flag.IntVar(&o.ports, "ports", 64, "source ports the flood comes from")
	flag.DurationVar(&o.downloadEvery, "download-every", 2*time.Second, "time between two legitimate downloads")
	flag.IntVar(&o.malformed, "malformed", 0, "then send this many malformed datagrams and check the server still serves")
	flag.IntVar(&o.malformedRate, "malformed-rate", 20_000, "malformed datagrams per second")
	flag.StringVar(&o.out, "json", "", "also write the results as JSON to `FILE`")
	phases := flag.String("phases", "noload,hello,garbage", "the phases to run, of noload, hello, garbage, retry, frozen")
	flag.IntVar(&o.retryRate, "retry-rate", 1000, "ClientHellos per second that answer the Retry, in the retry phase")
	flag.StringVar(&o.local, "local", "", "the legitimate client's local `ADDR` (host:port), e.g. 127.0.1.1:0 beside the retry phase")
	flag.IntVar(&o.frozen, "frozen", 100, "clients that never read, in the frozen phase (at most 2000)")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the tool to `FILE`, for go tool pprof")
	flag.Parse()
	o.phases = map[string]bool{}
	for _, p := range strings.Split(*phases, ",") {
		switch p {
		case "noload", "hello", "garbage", "retry", "frozen":
			o.phases[p] = true
		default:
			fail("--phases: unknown phase %q", p)
		}
	}
	ap, err := netip.ParseAddrPort(*addr)
	if err != nil || !ap.Addr().IsLoopback() {
		fail("--addr %s: a loopback address and port, please", *addr)
	}
	o.addr = ap
	switch {
	case o.pid <= 0:
		fail("--pid is required")
	case o.phase <= 0 || o.phase > maxPhase:
		fail("--phase %v: between 0 and %v", o.phase, maxPhase)
	case o.helloRate < 0 || o.helloRate > maxRate || o.garbageRate < 0 || o.garbageRate > maxRate || o.malformedRate <= 0 || o.malformedRate > maxRate:
		fail("rates between 0 and %d per second", maxRate)
	case o.malformed < 0 || o.malformed > maxMalformed:
		fail("--malformed between 0 and %d", maxMalformed)
	case o.ports < 1 || o.ports > 1024:
		fail("--ports between 1 and 1024")
	case o.retryRate < 1 || o.retryRate > maxRate:
		fail("--retry-rate between 1 and %d", maxRate)
	case o.frozen < 1 || o.frozen > maxFrozen:
		fail("--frozen between 1 and %d", maxFrozen)
	}
	if _, err := rss(o.pid); err != nil {
		fail("--pid %d: %v", o.pid, err)
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fail("--cpuprofile: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail("--cpuprofile: %v", err)
		}
	}
	err = run(o)
	if o.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "flood: "+format+"\n", args...)
	os.Exit(2)
}

// replies counts the datagrams the server sent the flood's ports.
var replies atomic.Int64

// phaseResult is what one phase measured.
type phaseResult struct {
	Name           string    `json:"name"`
	Sent           int       `json:"datagrams_sent"`
	SentPerSecond  float64   `json:"datagrams_per_second"`
	RSSMedianMB    float64   `json:"rss_median_mb"`
	RSSMaxMB       float64   `json:"rss_max_mb"`
	Downloads      int       `json:"downloads"`
	Failed         int       `json:"downloads_failed"`
	DownloadMedian float64   `json:"download_median_ms"`
	DownloadMax    float64   `json:"download_max_ms"`
	DownloadsMs    []float64 `json:"downloads_ms"`
	HandshakesMs   []float64 `json:"handshakes_ms"`
	HandshakeMax   float64   `json:"handshake_max_ms"`
	// RcvbufErrors is the growth of the kernel's count of UDP datagrams
	// dropped at a full socket buffer (/proc/net/snmp), machine-wide.
	RcvbufErrors int `json:"udp_rcvbuf_errors"`
	// Replies counts the datagrams the server sent the flood's ports.
	Replies    int64    `json:"replies"`
	Errors     []string `json:"errors,omitempty"`
	LoadBefore string   `json:"loadavg_before"`
	LoadAfter  string   `json:"loadavg_after"`
}

func run(o options) error {
	socks := make([]*net.UDPConn, o.ports)
	for i := range socks {
		uc, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(o.addr))
		if err != nil {
			return err
		}
		defer uc.Close()
		socks[i] = uc
		// Read what the server answers (Retry, stateless resets...), so
		// that the kernel's drop count is the server's.
		go func() {
			buf := make([]byte, 65536)
			for {
				if _, err := uc.Read(buf); err != nil && errors.Is(err, net.ErrClosed) {
					return
				}
				replies.Add(1)
			}
		}()
	}
	// Everything is made before the phases, so that making it does not
	// compete with the server for the CPU while it is measured.
	n := int(o.phase.Seconds() * float64(o.helloRate))
	if !o.phases["hello"] {
		n = 0
	}
	fmt.Fprintf(os.Stderr, "flood: making %d ClientHellos...\n", n)
	hellos := make([][][]byte, n)
	for i := range hellos {
		hellos[i] = clientHello()
	}
	r := mrand.New(mrand.NewPCG(1, 2))
	garbage := make([][]byte, min(int(o.phase.Seconds()*float64(o.garbageRate)), 50_000))
	for i := range garbage {
		garbage[i] = floodgen.GarbageInitial(r)
	}

	var results []phaseResult
	phases := []struct {
		key  string
		name string
		rate int
		next func(i int) [][]byte
	}{
		{"noload", "no load", 0, nil},
		{"hello", fmt.Sprintf("%d genuine ClientHellos/s", o.helloRate), o.helloRate, func(i int) [][]byte { return hellos[i%len(hellos)] }},
		{"garbage", fmt.Sprintf("%d garbage Initials/s", o.garbageRate), o.garbageRate, func(i int) [][]byte { return [][]byte{garbage[i%len(garbage)]} }},
	}
	for _, ph := range phases {
		if !o.phases[ph.key] || ph.rate == 0 && ph.next != nil {
			continue
		}
		res := measure(o, socks, ph.name, ph.rate, ph.next)
		results = append(results, res)
		report(res)
	}
	if o.phases["retry"] {
		res, err := retryPhase(o)
		if err != nil {
			return err
		}
		results = append(results, res)
		report(res)
	}
	if o.phases["frozen"] {
		res, err := frozenPhase(o)
		if err != nil {
			return err
		}
		results = append(results, res)
		report(res)
	}
	if o.malformed > 0 {
		res := malformed(o, socks, r)
		results = append(results, res)
		report(res)
	}
	if o.out != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(o.out, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// measure runs one phase: flood at rate units per second (each unit the
// datagrams next returns), sample the server's memory every 100 ms and
// download the file every downloadEvery.
func measure(o options, socks []*net.UDPConn, name string, rate int, next func(int) [][]byte) phaseResult {
	return measureWith(o, name, func(ctx context.Context) int { return send(ctx, socks, rate, next) })
}

// measureWith is measure with the flood flood, which runs until ctx is
// done and returns how many datagrams (or attempts) it sent.
func measureWith(o options, name string, flood func(ctx context.Context) int) phaseResult {
	res := phaseResult{Name: name, LoadBefore: loadavg()}
	ctx, cancel := context.WithTimeout(context.Background(), o.phase)
	defer cancel()
	sent := make(chan int, 1)
	go func() { sent <- flood(ctx) }()
	rssDone := make(chan []float64, 1)
	go func() {
		var samples []float64
		tk := time.NewTicker(100 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-ctx.Done():
				rssDone <- samples
				return
			case <-tk.C:
				if v, err := rss(o.pid); err == nil {
					samples = append(samples, v)
				}
			}
		}
	}()
	start := time.Now()
	drops0, replies0 := rcvbufErrors(), replies.Load()
	for ctx.Err() == nil {
		hs, ms, err := download(ctx, o)
		switch {
		case err != nil && ctx.Err() != nil: // cut by the phase's end
		case err != nil:
			res.Failed++
			res.Errors = append(res.Errors, err.Error())
		default:
			res.Downloads++
			res.DownloadsMs = append(res.DownloadsMs, ms)
			res.HandshakesMs = append(res.HandshakesMs, hs)
		}
		select {
		case <-ctx.Done():
		case <-time.After(o.downloadEvery):
		}
	}
	res.Sent = <-sent
	res.SentPerSecond = float64(res.Sent) / time.Since(start).Seconds()
	samples := <-rssDone
	res.RSSMedianMB, res.RSSMaxMB = median(samples), slices.Max(append(samples, 0))
	res.DownloadMedian, res.DownloadMax = median(res.DownloadsMs), slices.Max(append(res.DownloadsMs, 0))
	res.HandshakeMax = slices.Max(append(res.HandshakesMs, 0))
	res.RcvbufErrors = rcvbufErrors() - drops0
	res.Replies = replies.Load() - replies0
	res.LoadAfter = loadavg()
	return res
}

// send paces the flood until ctx is done and returns how many datagrams
// went out.
func send(ctx context.Context, socks []*net.UDPConn, rate int, next func(int) [][]byte) int {
	if rate == 0 {
		<-ctx.Done()
		return 0
	}
	start := time.Now()
	units, dgrams := 0, 0
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return dgrams
		case <-tk.C:
		}
		due := int(time.Since(start).Seconds() * float64(rate))
		for ; units < due; units++ {
			s := socks[units%len(socks)]
			for _, d := range next(units) {
				if _, err := s.Write(d); err == nil {
					dgrams++
				}
			}
		}
	}
}

// download fetches the file over a new connection and returns how long
// the handshake, and the handshake and the transfer, took in milliseconds.
func download(ctx context.Context, o options) (hs, total float64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	c, err := mpquic.DialWithOptions(ctx, o.addr.String(), &mpquic.Config{TLS: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{hq.ALPN}}},
		mpquic.DialOptions{LocalAddr: o.local})
	if err != nil {
		return 0, 0, err
	}
	hs = float64(time.Since(start).Microseconds()) / 1000
	defer c.Close()
	s, err := c.OpenStreamSync(ctx)
	if err != nil {
		return hs, 0, err
	}
	dl, _ := ctx.Deadline()
	s.SetReadDeadline(dl)
	var b bytes.Buffer
	if _, err := hq.Get(ctx, s, o.path, &b); err != nil {
		return hs, 0, err
	}
	return hs, float64(time.Since(start).Microseconds()) / 1000, nil
}

// malformed sends o.malformed datagrams of every malformed kind, then
// checks that the server process lives and serves.
func malformed(o options, socks []*net.UDPConn, r *mrand.Rand) phaseResult {
	res := phaseResult{Name: fmt.Sprintf("%d malformed datagrams", o.malformed), LoadBefore: loadavg()}
	kinds := []func() []byte{
		func() []byte { return floodgen.Random(r, 1+r.IntN(1500)) }, // anything
		func() []byte { // a short header of an unknown connection
			b := floodgen.Random(r, 20+r.IntN(1300))
			b[0] = 0x40 | b[0]&0x3f
			return b
		},
		func() []byte { // a long header of an unknown version
			b := floodgen.Random(r, 1200+r.IntN(300))
			b[0] |= 0xc0
			b[5] = 8
			return b
		},
		func() []byte { // a version 1 Initial whose Length runs past the datagram
			b := floodgen.GarbageInitial(r)
			return b[:len(b)-1-r.IntN(100)]
		},
		func() []byte { return floodgen.GarbageInitial(r) },
		func() []byte { // a truncated long header
			b := floodgen.GarbageInitial(r)
			return b[:1+r.IntN(30)]
		},
		func() []byte { // Handshake and 0-RTT packets of no connection
			b := floodgen.GarbageInitial(r)
			b[0] = b[0]&0xcf | byte(1+r.IntN(2))<<4
			return b
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), maxPhase)
	defer cancel()
	start := time.Now()
	drops0, replies0 := rcvbufErrors(), replies.Load()
	tk := time.NewTicker(time.Millisecond)
	defer tk.Stop()
	for res.Sent < o.malformed && ctx.Err() == nil {
		<-tk.C
		due := min(o.malformed, int(time.Since(start).Seconds()*float64(o.malformedRate)))
		for ; res.Sent < due; res.Sent++ {
			socks[res.Sent%len(socks)].Write(kinds[res.Sent%len(kinds)]())
		}
	}
	res.SentPerSecond = float64(res.Sent) / time.Since(start).Seconds()
	time.Sleep(100 * time.Millisecond) // the last answers
	res.RcvbufErrors, res.Replies = rcvbufErrors()-drops0, replies.Load()-replies0
	if _, err := os.Stat("/proc/" + strconv.Itoa(o.pid)); err != nil {
		res.Errors = append(res.Errors, "the server is gone: "+err.Error())
	}
	_, ms, err := download(context.Background(), o)
	if err != nil {
		res.Failed++
		res.Errors = append(res.Errors, err.Error())
	} else {
		res.Downloads, res.DownloadsMs = 1, []float64{ms}
		res.DownloadMedian, res.DownloadMax = ms, ms
	}
	if v, err := rss(o.pid); err == nil {
		res.RSSMedianMB, res.RSSMaxMB = v, v
	}
	res.LoadAfter = loadavg()
	return res
}

func report(r phaseResult) {
	fmt.Printf("%-30s sent %8d (%7.0f/s)  server RSS median %6.1f MB max %6.1f MB  downloads %3d ok %2d failed  median %8.1f ms max %8.1f ms (handshake max %7.1f ms)  replies %d, UDP rcvbuf drops %d  load %s -> %s\n",
		r.Name, r.Sent, r.SentPerSecond, r.RSSMedianMB, r.RSSMaxMB, r.Downloads, r.Failed, r.DownloadMedian, r.DownloadMax, r.HandshakeMax, r.Replies, r.RcvbufErrors, r.LoadBefore, r.LoadAfter)
	for _, e := range r.Errors {
		fmt.Printf("  error: %s\n", e)
	}
}

func clientHello() [][]byte {
	d, err := floodgen.ClientHello(&core.Config{TLS: &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", NextProtos: []string{hq.ALPN}}})
	if err != nil {
		fail("%v", err)
	}
	return d
}

// rss returns the resident memory of a process in MB.
func rss(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseFloat(f[1], 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// rcvbufErrors is the kernel's count of UDP datagrams dropped at a full
// socket buffer, machine-wide (-1 if unknown).
func rcvbufErrors() int {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return -1
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "Udp:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, n := range names {
			if n == "RcvbufErrors" && i < len(f) {
				v, _ := strconv.Atoi(f[i])
				return v
			}
		}
	}
	return -1
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// retryPhase measures the server while ClientHellos that answer its Retry
// (and then go quiet) come at o.retryRate a second from o.ports ports of
// 127.0.0.1.
func retryPhase(o options) (phaseResult, error) {
	var socks []*net.UDPConn
	for range o.ports {
		uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return phaseResult{}, err
		}
		defer uc.Close()
		socks = append(socks, uc)
	}
	cfg := &core.Config{TLS: &tls.Config{InsecureSkipVerify: true, ServerName: "localhost", NextProtos: []string{hq.ALPN}}}
	var st floodgen.RetryFloodStats
	var ferr error
	res := measureWith(o, fmt.Sprintf("%d Retry-answering ClientHellos/s from %d ports", o.retryRate, o.ports), func(ctx context.Context) int {
		st, ferr = floodgen.RetryFlood(ctx, cfg, socks, o.addr, float64(o.retryRate), int(o.phase.Seconds()*float64(o.retryRate)))
		return int(st.Hellos)
	})
	if ferr != nil && !errors.Is(ferr, context.DeadlineExceeded) {
		return res, ferr
	}
	res.Replies = int64(st.Retries + st.Other)
	fmt.Printf("  retry flood: %d ClientHellos, %d Retries answered, %d other replies\n", st.Hellos, st.Retries, st.Other)
	return res, nil
}

// frozenPhase opens o.frozen connections that request o.path and never
// read, samples the server's RSS for o.phase while they hold, closes them
// and samples it for 10 s more. RSSMaxMB is the maximum while they hold;
// RSSMedianMB the last sample after they closed.
func frozenPhase(o options) (phaseResult, error) {
	res := phaseResult{Name: fmt.Sprintf("%d frozen readers of %s", o.frozen, o.path), LoadBefore: loadavg()}
	idle, err := rss(o.pid)
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), maxPhase)
	defer cancel()
	cfg := &mpquic.Config{TLS: &tls.Config{InsecureSkipVerify: true, NextProtos: []string{hq.ALPN}}, MaxIncomingStreams: 1}
	var conns []*mpquic.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	start := time.Now()
	for range o.frozen {
		c, err := mpquic.DialWithOptions(ctx, o.addr.String(), cfg, mpquic.DialOptions{LocalAddr: o.local})
		if err != nil {
			res.Failed++
			res.Errors = append(res.Errors, err.Error())
			continue
		}
		conns = append(conns, c)
		s, err := c.OpenStreamSync(ctx)
		if err == nil {
			_, err = fmt.Fprintf(s, "GET %s\r\n", o.path)
			s.Close()
		}
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
		res.Sent++
	}
	fmt.Printf("  %d frozen connections opened in %v; server RSS idle %.1f MB\n", len(conns), time.Since(start).Round(time.Millisecond), idle)
	var samples []float64
	for end := time.Now().Add(o.phase); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if v, err := rss(o.pid); err == nil {
			samples = append(samples, v)
		}
	}
	res.RSSMaxMB = slices.Max(append(samples, 0))
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	var after []string
	for i := 1; i <= 10; i++ {
		time.Sleep(time.Second)
		v, _ := rss(o.pid)
		after = append(after, fmt.Sprintf("%.0f", v))
		res.RSSMedianMB = v
	}
	fmt.Printf("  server RSS while they held: median %.1f MB, max %.1f MB; each second after they closed: %s MB\n",
		median(samples), res.RSSMaxMB, strings.Join(after, " "))
	res.LoadAfter = loadavg()
	return res, nil
}
