package cli

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// baselinesFile is a one-path request-response experiment swept over
// every transport kind.
const baselinesFile = `name = "baselines"
duration = "3s"
backend = "netns"
[[path]]
rate = "20Mbit"
rtt = "20ms"
[[source]]
name = "rr"
kind = "request-response"
interval = "50ms"
size = 1024
reply_size = 1024
[sweep]
"transport.kind" = ["mpq", "quic-go", "tcp", "tls", "mptcp"]
`

// baselineSummary is what the baseline tests read of summary.json.
type baselineSummary struct {
	Transport struct {
		Kind       string `json:"kind"`
		Kernel     string `json:"kernel"`
		Congestion string `json:"congestion"`
	} `json:"transport"`
	Multipath bool `json:"multipath"`
	Sources   []struct {
		Name      string `json:"name"`
		Messages  int    `json:"messages"`
		Completed int    `json:"completed"`
		Failed    int    `json:"failed"`
	} `json:"sources"`
	Paths []struct {
		ID     uint64 `json:"id"`
		Client *struct {
			BytesSent     uint64 `json:"bytes_sent"`
			BytesReceived uint64 `json:"bytes_received"`
		} `json:"client"`
	} `json:"paths"`
}

// TestNetnsBaselines is issue 23's check of the baselines: on the
// namespace backend (forwarder), a request-response experiment completes
// every message over each of mpq, quic-go, tcp, tls and mptcp, and
// summary.json's transport names the kind (with the kernel and its
// congestion controller for the kernel's transports).
func TestNetnsBaselines(t *testing.T) {
	out := runNetnsFile(t, "i23base", "baselines", baselinesFile)
	for _, kind := range []string{"mpq", "quic-go", "tcp", "tls", "mptcp"} {
		var sum baselineSummary
		readJSON(t, filepath.Join(out, "transport.kind="+kind, "summary.json"), &sum)
		if sum.Transport.Kind != kind {
			t.Errorf("%s: summary.json's transport is %+v", kind, sum.Transport)
		}
		kernel := kind == "tcp" || kind == "tls" || kind == "mptcp"
		if kernel != (sum.Transport.Kernel != "" && sum.Transport.Congestion != "") {
			t.Errorf("%s: kernel %q, congestion %q", kind, sum.Transport.Kernel, sum.Transport.Congestion)
		}
		if len(sum.Sources) != 1 {
			t.Fatalf("%s: %d sources", kind, len(sum.Sources))
		}
		s := sum.Sources[0]
		// A request every 50 ms for 3 s.
		if s.Messages < 55 || s.Completed != s.Messages || s.Failed != 0 {
			t.Errorf("%s: %d requests, %d completed, %d failed", kind, s.Messages, s.Completed, s.Failed)
		}
		if len(sum.Paths) != 1 || sum.Paths[0].Client == nil || sum.Paths[0].Client.BytesSent < uint64(s.Messages)*1024 {
			t.Errorf("%s: paths %+v", kind, sum.Paths)
		}
		// Over the kernel's transports a 1 kB request goes out as one
		// segment (each write is sent at once:
		// trafficgen.Peer.WriteWhole), and the reply's acknowledgement as
		// one more: under two packets a request towards the server, the
		// handshake aside (measured: 101-105 for 60 requests, and 161-165
		// when the header went alone; QUIC's acknowledgements make mpq's
		// and quic-go's 159-164).
		var links []struct {
			Up struct {
				Sent int `json:"sent"`
			} `json:"up"`
		}
		readJSON(t, filepath.Join(out, "transport.kind="+kind, "emulator.json"), &links)
		if len(links) != 1 {
			t.Fatalf("%s: emulator.json has %d paths", kind, len(links))
		}
		t.Logf("%s: %d packets towards the server for %d requests", kind, links[0].Up.Sent, s.Messages)
		if kernel && links[0].Up.Sent > 2*s.Messages+10 {
			t.Errorf("%s: %d packets towards the server for %d requests: a request in more than one segment", kind, links[0].Up.Sent, s.Messages)
		}
	}
}

// mptcpFile is a bulk transfer over two paths of equal rate with the
// kernel's MPTCP.
const mptcpFile = `name = "mptcp"
duration = "4s"
backend = "netns"
[[path]]
rate = "10Mbit"
rtt = "20ms"
[[path]]
rate = "10Mbit"
rtt = "30ms"
[transport]
kind = "mptcp"
[[source]]
name = "bulk"
kind = "bulk"
`

// TestNetnsMPTCPTwoPaths: the kernel's MPTCP carries at least 10 % of a
// bulk transfer's bytes on each of two paths (a subflow per client
// address, from the endpoints mpq configures in the client's namespace).
func TestNetnsMPTCPTwoPaths(t *testing.T) {
	out := runNetnsFile(t, "i23mptcp", "mptcp", mptcpFile)
	var sum baselineSummary
	readJSON(t, filepath.Join(out, "run", "summary.json"), &sum)
	if sum.Transport.Kind != "mptcp" || !sum.Multipath || len(sum.Paths) != 2 {
		t.Fatalf("transport %+v, multipath %v, %d paths", sum.Transport, sum.Multipath, len(sum.Paths))
	}
	var total uint64
	for _, p := range sum.Paths {
		if p.Client == nil {
			t.Fatalf("path %d without the client's statistics", p.ID)
		}
		total += p.Client.BytesReceived
	}
	for _, p := range sum.Paths {
		share := float64(p.Client.BytesReceived) / float64(total)
		t.Logf("path %d: %d of %d bytes (%.1f %%)", p.ID, p.Client.BytesReceived, total, 100*share)
		if share < 0.10 {
			t.Errorf("path %d carried %.1f %% of the bytes, want at least 10 %%", p.ID, 100*share)
		}
	}
	if total < 2_000_000 {
		t.Errorf("%d bytes in 4 s over 2 × 10 Mbit/s", total)
	}
}

// TestLoopbackQuicgo: quic-go runs on the loopback backend too (no
// root), through the same emulator, and summary.json names it.
func TestLoopbackQuicgo(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "baselines.toml", baselinesFile)
	code, stdout, stderr := runCmd(t, "run", file, "--backend", "loopback", "--set", "transport.kind=quic-go", "--set", "duration=2s", "--out", filepath.Join(dir, "out"))
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "out", "baselines", "*", "summary.json"))
	if len(m) != 1 {
		t.Fatalf("runs: %v", m)
	}
	var sum baselineSummary
	readJSON(t, m[0], &sum)
	if sum.Transport.Kind != "quic-go" || len(sum.Sources) != 1 {
		t.Fatalf("transport %+v, %d sources", sum.Transport, len(sum.Sources))
	}
	if s := sum.Sources[0]; s.Messages < 35 || s.Completed != s.Messages {
		t.Errorf("%d requests, %d completed", s.Messages, s.Completed)
	}
}

// kernelWindowFile is a bulk download over the kernel's TCP with CUBIC.
const kernelWindowFile = `name = "kernel-window"
duration = "3s"
backend = "netns"
[[path]]
rate = "20Mbit"
rtt = "20ms"
[transport]
kind = "tcp"
tcp_congestion = "cubic"
[[source]]
name = "bulk"
kind = "bulk"
`

// TestNetnsKernelWindow: a run over the kernel's TCP writes the
// kernel's window over time into paths.csv, tcp_info sampled every
// output.path_interval (10 ms) at both ends, so that it can be drawn
// beside mpq's (issue 36).
func TestNetnsKernelWindow(t *testing.T) {
	out := runNetnsFile(t, "i36win", "kernel-window", kernelWindowFile)
	f, err := os.Open(filepath.Join(out, "run", "paths.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("paths.csv: %d rows, %v", len(rows), err)
	}
	if got := strings.Join(rows[0], ","); got != "time_ms,vantage,path_id,cwnd,bytes_in_flight,ssthresh,srtt_ms,min_rtt_ms,latest_rtt_ms,state" {
		t.Fatalf("header %s", got)
	}
	n := map[string]int{}
	var last, gap, maxCwnd float64
	states := map[string]bool{}
	for _, r := range rows[1:] {
		at, _ := strconv.ParseFloat(r[0], 64)
		cwnd, _ := strconv.ParseFloat(r[3], 64)
		srtt, _ := strconv.ParseFloat(r[6], 64)
		n[r[1]]++
		if r[1] != "server" || at < 0 || at >= 3000 {
			continue
		}
		if last > 0 {
			gap = max(gap, at-last)
		}
		last = at
		maxCwnd = max(maxCwnd, cwnd)
		states[r[9]] = true
		if srtt < 20 {
			t.Errorf("row %v: srtt below the 20 ms of the path", r)
		}
	}
	t.Logf("rows %v, largest gap between the server's rows %.1f ms, largest window %.0f bytes, states %v", n, gap, maxCwnd, states)
	// 3 s every 10 ms: 300 rows per end (fewer on a busy machine).
	if n["server"] < 200 || n["client"] < 200 {
		t.Errorf("rows per end %v, want about 300 each", n)
	}
	if gap > 100 {
		t.Errorf("%.1f ms between two of the server's rows", gap)
	}
	// The window grows from the initial 10 segments.
	if maxCwnd < 20*1448 {
		t.Errorf("largest window %.0f bytes", maxCwnd)
	}
	if !states["slow_start"] {
		t.Errorf("states %v: no slow start", states)
	}
}
