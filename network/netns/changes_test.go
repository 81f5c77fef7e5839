package netns

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

const changesDoc = `name = "c"
duration = "30s"
[[path]]
rate = "50Mbit"
rtt = "60ms"
[[path.change]]
at = "10s"
down = true
[[path.change]]
at = "15s"
down = false
rate = "20Mbit"
direction = "down"
[[path]]
rate = "0"
rtt = "20ms"
[[path.change]]
at = "5s"
direction = "up"
rate = "10Mbit"
loss = "1%"
jitter = "2ms"
[[source]]
kind = "bulk"
`

// In netem mode the scheduled changes are tc qdisc change commands at
// their times: every netem option restated, the rate and the limit too (a
// direction down loses every packet).
func TestChangePlan(t *testing.T) {
	runs, err := experiment.Parse("c.toml", []byte(changesDoc), nil)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := FromExperiment(&runs[0], "chg", ModeNetem)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range topo.ChangePlan() {
		got = append(got, c.At.String()+" "+c.Cmd.String())
	}
	// netem's limits, in datagrams of 1350 bytes (the rate charges the
	// UDP payload: "-42" takes the headers off the frame): at 5 s the
	// queue of one BDP, 25,000 bytes, holds 18 and 11 ms (the mean delay)
	// at 10 Mbit/s 10.2 (10); at 10 s 375,000 bytes 277 and 30 ms at 50
	// Mbit/s 138.9 (139); at 15 s 150,000 bytes 111 and 30 ms at 20
	// Mbit/s 55.6 (56).
	want := []string{
		"5s tc -n chg-client qdisc change dev p1 root handle 1: netem limit 28 delay 11000us 1000us loss random 1% rate 10000000bit -42",
		"10s tc -n chg-client qdisc change dev p0 root handle 1: netem limit 416 delay 30000us loss random 100% rate 50000000bit -42",
		"10s tc -n chg-server qdisc change dev p0 root handle 1: netem limit 416 delay 30000us loss random 100% rate 50000000bit -42",
		"15s tc -n chg-server qdisc change dev p0 root handle 1: netem limit 167 delay 30000us rate 20000000bit -42",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const forwarderChanges = `name = "fc"
seed = 4
duration = "1h"
[[path]]
rate = "50Mbit"
rtt = "20ms"
[[path.change]]
at = "30m"
delay = "40ms"
[[path.change]]
at = "40m"
direction = "up"
down = true
[[source]]
name = "s"
kind = "bulk"
`

// The forwarder applies a path's scheduled changes from the run's start,
// read from the start file the client end writes: before the file exists
// nothing changes; with a start 35 minutes ago the path has its 80 ms
// round trip; with one 45 minutes ago its up direction drops everything.
// (Starts in the past put the path past its changes without waiting.)
func TestForwarderScheduledChanges(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name  string
		since time.Duration // the start was this long ago; 0: no start file
		rtt   time.Duration // 0: the echoes are lost
	}{
		{"no start", 0, 20 * time.Millisecond},
		{"delay changed", 35 * time.Minute, 80 * time.Millisecond},
		{"up down", 45 * time.Minute, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topo, _ := upForwarder(t, forwarderChanges, "chg"+strconv.Itoa(int(tc.since.Minutes())))
			if tc.since > 0 {
				start := time.Now().Add(-tc.since).UnixNano()
				if err := os.WriteFile(StartFile(topo.Tag), []byte(strconv.FormatInt(start, 10)+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The forwarder polls for the start file every 2 ms: the
			// first echo may precede it.
			if tc.rtt == 0 {
				if n := echoLost(t, topo, "10.0.0.1", "10.0.0.2", 6, 500*time.Millisecond); n < 5 {
					t.Errorf("%d of 6 echoes lost over a path whose up direction is down, want 5 or 6", n)
				}
				return
			}
			rtts := echoRTTs(t, topo, "10.0.0.1", "10.0.0.2", 6)[1:]
			for _, r := range rtts {
				if r < tc.rtt {
					t.Errorf("a round trip of %v, below the path's %v", r, tc.rtt)
				}
			}
			if q := quantile(rtts, 0.25); q > tc.rtt+5*time.Millisecond && keepsTime(t, time.Millisecond) {
				t.Errorf("first quartile of the round trips %v, want %v", q, tc.rtt)
			}
		})
	}
}

// The netem driver waits for the start file, then runs each change at its
// time after the start, never before, and stops at the first that fails.
func TestApplyChangesTimes(t *testing.T) {
	dir := t.TempDir()
	startFile := filepath.Join(dir, "start")
	plan := []TimedCmd{{At: 30 * time.Millisecond, Cmd: cmd("a")}, {At: 60 * time.Millisecond, Cmd: cmd("b")}, {At: 90 * time.Millisecond, Cmd: cmd("fail")}, {At: 120 * time.Millisecond, Cmd: cmd("never")}}
	type ran struct {
		name string
		at   time.Time
	}
	var runs []ran
	run := func(c Cmd) error {
		runs = append(runs, ran{c.Args[0], time.Now()})
		if c.Args[0] == "fail" {
			return errors.New("no such qdisc")
		}
		return nil
	}
	start := time.Now().Add(50 * time.Millisecond)
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() { done <- applyChanges(context.Background(), plan, startFile, &out, run) }()
	if err := os.WriteFile(startFile, []byte(strconv.FormatInt(start.UnixNano(), 10)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "scheduled change at 90ms: no such qdisc") {
		t.Errorf("error %v", err)
	}
	if len(runs) != 3 {
		t.Fatalf("ran %+v", runs)
	}
	for i, r := range runs {
		if due := start.Add(plan[i].At); r.name != plan[i].Cmd.Args[0] || r.at.Before(due) {
			t.Errorf("%s ran %v before its time", r.name, due.Sub(r.at))
		}
	}
	if !strings.Contains(out.String(), "# at 30ms after the start (late by ") {
		t.Errorf("log %q", out.String())
	}
}
