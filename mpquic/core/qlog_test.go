package core

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"
	"time"
)

// traceBuffer collects a qlog trace in memory.
type traceBuffer struct {
	bytes.Buffer
	closed bool
}

func (b *traceBuffer) Close() error { b.closed = true; return nil }

// qlogEvent is an event record of a trace.
type qlogEvent struct {
	Time *float64
	Name string
	Data map[string]any
}

// parseTrace splits a JSON-SEQ trace into its header and events.
func parseTrace(t *testing.T, b []byte) []qlogEvent {
	t.Helper()
	if len(b) == 0 || b[0] != 0x1e {
		t.Fatal("trace does not start with RS")
	}
	recs := bytes.Split(b[1:], []byte{0x1e})
	var events []qlogEvent
	for i, r := range recs {
		if !bytes.HasSuffix(r, []byte("\n")) {
			t.Fatalf("record %d does not end with a line feed: %q", i, r)
		}
		if i == 0 {
			continue // the header, checked in package qlog
		}
		var e qlogEvent
		if err := json.Unmarshal(r, &e); err != nil {
			t.Fatalf("record %d %q: %v", i, r, err)
		}
		if e.Time == nil || e.Name == "" || e.Data == nil {
			t.Fatalf("record %d lacks time, name or data: %q", i, r)
		}
		events = append(events, e)
	}
	return events
}

// ccStates are the congestion states of qlog.
var ccStates = map[string]bool{"slow_start": true, "congestion_avoidance": true, "recovery": true, "application_limited": true}

// hyStartSteps are the steps of HyStart++ in qlog's hystart_step.
var hyStartSteps = map[string]bool{"round_ended": true, "css_entered": true, "css_left": true, "exited": true}

// TestQlogTransfer runs a lossy transfer with qlog on both ends and checks
// the events the traces must contain. The server (the sender) runs
// HyStart++ and logs its steps; the client, in standard slow start, none.
func TestQlogTransfer(t *testing.T) {
	cc, sc := testConfigs(t)
	sc.SlowStart = "hystart++"
	traces := map[string]*traceBuffer{}
	for _, c := range []*Config{cc, sc} {
		c.Qlog = func(vantage string, odcid []byte) io.WriteCloser {
			if traces[vantage] != nil {
				t.Errorf("second %s trace", vantage)
			}
			traces[vantage] = &traceBuffer{}
			return traces[vantage]
		}
	}
	p := newPair(t, cc, sc, EndpointConfig{})
	n := 0
	p.drop = func(toServer bool, d []byte) bool {
		n++
		return !toServer && n > 20 && n%10 == 0
	}
	p.handshake()
	p.transfer(p.server, p.client, randomBytes(1<<20, 11), 60*time.Second)
	if p.server.Paths()[0].PacketsLost == 0 {
		t.Fatal("no loss was induced")
	}
	closePair(p)

	for _, vantage := range []string{"client", "server"} {
		tb := traces[vantage]
		if tb == nil || !tb.closed {
			t.Fatalf("%s trace missing or not closed", vantage)
		}
		events := parseTrace(t, tb.Bytes())
		count := map[string]int{}
		params := map[string]bool{}
		last := 0.0
		for _, e := range events {
			count[e.Name]++
			if *e.Time < last {
				t.Fatalf("%s: %s at %v after an event at %v", vantage, e.Name, *e.Time, last)
			}
			last = *e.Time
			switch e.Name {
			case "quic:recovery_metrics_updated":
				for _, k := range []string{"congestion_window", "bytes_in_flight", "smoothed_rtt"} {
					if _, ok := e.Data[k].(float64); !ok {
						t.Fatalf("%s: recovery_metrics_updated without %s: %v", vantage, k, e.Data)
					}
				}
				if step, ok := e.Data["hystart_step"].(string); ok {
					count["hystart"]++
					_, samples := e.Data["hystart_round_samples"].(float64)
					_, css := e.Data["hystart_css"].(bool)
					if !hyStartSteps[step] || !samples || !css {
						t.Fatalf("%s: HyStart++ step %q without its samples or css: %v", vantage, step, e.Data)
					}
				}
			case "quic:parameters_set":
				params[e.Data["initiator"].(string)] = true
				if _, ok := e.Data["initial_max_data"]; !ok {
					t.Fatalf("%s: parameters_set without initial_max_data: %v", vantage, e.Data)
				}
			case "quic:congestion_state_updated":
				for _, k := range []string{"old", "new"} {
					if s, _ := e.Data[k].(string); !ccStates[s] {
						t.Fatalf("%s: congestion_state_updated with %s state %q", vantage, k, s)
					}
				}
			}
		}
		want := []string{"quic:connection_started", "quic:packet_sent", "quic:packet_received",
			"quic:recovery_metrics_updated", "quic:parameters_set", "quic:connection_closed"}
		if vantage == "server" {
			// The sender loses packets, changes congestion state and
			// ends rounds of HyStart++.
			want = append(want, "quic:packet_lost", "quic:congestion_state_updated", "hystart")
		} else if count["hystart"] != 0 {
			t.Errorf("client: %d HyStart++ steps in standard slow start", count["hystart"])
		}
		for _, name := range want {
			if count[name] == 0 {
				t.Errorf("%s trace has no %s (events: %v)", vantage, name, count)
			}
		}
		if !params["local"] || !params["remote"] {
			t.Errorf("%s: parameters_set of %v, want local and remote", vantage, params)
		}
		t.Logf("%s: %d events: %v", vantage, len(events), count)
	}
}
