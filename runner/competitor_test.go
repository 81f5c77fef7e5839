package runner

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

const competitorRun = `name = "comp"
duration = "8s"
[[path]]
rate = "10Mbit"
rtt = "30ms"
[[competitor]]
name = "reno"
path = 0
start = "2s"
stop = "6s"
[transport]
multipath = false
[[source]]
name = "bg"
kind = "bulk"
`

// In the simulator a competitor is a connection of its own over its path:
// from 2 to 6 s it shares the 10 Mbit/s link with the experiment's
// connection (between them 9 to 10 Mbit/s, each at least 3), sends
// nothing before, and its goodput is its bytes read over its 4 active
// seconds, as its rows of throughput.csv add up.
func TestSimCompetitor(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), load(t, competitorRun), dir)
	if err != nil {
		t.Fatal(err)
	}
	cs := res.Summary.Competitors
	if len(cs) != 1 || cs[0].Name != "reno" || cs[0].Path != 0 || cs[0].Congestion != "newreno" || cs[0].ActiveS != 4 || len(cs[0].Problems) != 0 {
		t.Fatalf("competitors %+v", cs)
	}
	c := cs[0]
	if c.GoodputMbps < 3 || c.GoodputMbps > 7 || c.ThroughputMbps < c.GoodputMbps {
		t.Errorf("competitor goodput %v, throughput %v Mbit/s", c.GoodputMbps, c.ThroughputMbps)
	}
	conn := map[float64]float64{}
	comp := map[float64]float64{}
	var compBytes float64
	for _, r := range readCSV(t, filepath.Join(dir, "throughput.csv")) {
		if r["what"] != "delivered" {
			continue
		}
		at := num(t, r["time_ms"])
		switch r["sender"] {
		case "server":
			conn[at] += num(t, r["mbps"])
		case "competitor:reno":
			comp[at] += num(t, r["mbps"])
			if at < 8000 {
				compBytes += num(t, r["bytes"])
			}
		}
	}
	if m := meanMbps(comp, 0, 1900); m != 0 {
		t.Errorf("competitor before its start: %v Mbit/s", m)
	}
	if m := meanMbps(conn, 3000, 6000) + meanMbps(comp, 3000, 6000); m < 9 || m > 10.01 {
		t.Errorf("connection and competitor together %v Mbit/s from 3 to 6 s", m)
	}
	if g := compBytes * 8 / 4 / 1e6; math.Abs(g-c.GoodputMbps) > 0.001 {
		t.Errorf("goodput %v, but its rows add up to %v Mbit/s over 4 s", c.GoodputMbps, g)
	}
}

// Over loopback a competitor is a connection of its own through the
// emulator's links of its path: it and the experiment's connection share
// the 10 Mbit/s link (together at most 4 s of its rate, a little over
// for a real-time emulator; the competitor at least 1 Mbit/s).
func TestLoopbackCompetitor(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time run")
	}
	doc := strings.Replace(strings.Replace(competitorRun, `duration = "8s"`, "duration = \"4s\"\nbackend = \"loopback\"", 1), "start = \"2s\"\nstop = \"6s\"", "start = \"1s\"", 1)
	dir := t.TempDir()
	res, err := Run(context.Background(), load(t, doc), dir)
	if err != nil {
		t.Fatal(err)
	}
	cs := res.Summary.Competitors
	if len(cs) != 1 || cs[0].ActiveS != 3 || len(cs[0].Problems) != 0 {
		t.Fatalf("competitors %+v", cs)
	}
	conn := res.Summary.GoodputMbps.Server.Total
	// Megabits over the run: the connection's 4 s, the competitor's 3.
	if cs[0].GoodputMbps < 1 || conn*4+cs[0].GoodputMbps*3 > 10.5*4 {
		t.Errorf("competitor %v Mbit/s over 3 s, connection %v over 4 s", cs[0].GoodputMbps, conn)
	}
	t.Logf("competitor %+v, connection %v Mbit/s", cs[0], conn)
}
