package qlogcheck

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/qlog"
)

type buf struct{ bytes.Buffer }

func (b *buf) Close() error { return nil }

// sample writes a trace with every event type package qlog writes.
func sample() []byte {
	var b buf
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := qlog.NewTrace(&b, "client", []byte{1, 2, 3, 4}, t0, "test")
	a := netip.MustParseAddrPort("127.0.0.1:4433")
	tr.ConnectionStarted(at(0), a, a, []byte{1}, []byte{2})
	tr.ParametersSet(at(0), "local", []qlog.Param{{Key: "initial_max_data", Uint: 1}})
	h := qlog.PacketHeader{PacketType: "1RTT", PacketNumber: 1, HasPacketNumber: true}
	tr.PacketSent(at(1), 0, h, 1200, nil)
	tr.PacketReceived(at(2), 0, h, 1200, nil)
	tr.PacketDropped(at(3), h, 10, "duplicate")
	tr.PacketLost(at(4), 0, h, "time_threshold")
	tr.MetricsUpdated(at(5), 0, qlog.Metrics{CongestionWindow: 10})
	tr.CongestionStateUpdated(at(6), 0, "slow_start", "recovery", "")
	tr.LossTimerUpdated(at(7), 0, "set", "pto", time.Millisecond)
	tr.KeyUpdated(at(8), 1, "local_update")
	tr.KeyDiscarded(at(9), "handshake")
	tr.PathStateUpdated(at(10), 1, "active", a, a)
	tr.ConnectionClosed(at(11), "local", 0, false, "", "")
	tr.Close()
	return b.Bytes()
}

func TestCheckAcceptsOurTraces(t *testing.T) {
	tr, err := Check(sample())
	if err != nil {
		t.Fatal(err)
	}
	if tr.VantagePoint != "client" || len(tr.Events) != 15 || tr.Counts["quic:packet_sent"] != 1 {
		t.Fatalf("vantage %q, %d events, counts %v", tr.VantagePoint, len(tr.Events), tr.Counts)
	}
}

// TestCheckRefuses: each thing qvis or the drafts refuse is reported.
func TestCheckRefuses(t *testing.T) {
	good := string(sample())
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"no qlog_version (qvis aborts)", `"qlog_version":"0.3",`, ``, "qlog_version <nil> is not one qvis loads"},
		{"qlog_format JSON", `"qlog_format":"JSON-SEQ"`, `"qlog_format":"JSON"`, `qvis needs "JSON-SEQ"`},
		{"no file_schema", `"file_schema":"urn:ietf:params:qlog:file:sequential",`, ``, "file_schema <nil>"},
		{"no event_schemas", `"event_schemas":["` + qlog.EventSchema + `"]`, `"event_schemas":[]`, "event_schemas missing"},
		{"legacy event name", `"name":"quic:packet_lost"`, `"name":"recovery:packet_lost"`, `name "recovery:packet_lost" is not an event`},
		{"time going back", `{"time":11,`, `{"time":0.5,`, "before the previous event"},
		{"no line feed", "}}\n\x1e", "}}\x1e", "does not end with a line feed"},
		{"uppercase field", `"congestion_window"`, `"Congestion_Window"`, `"Congestion_Window" is not lowercase`},
		{"missing required field", `"new":"recovery"`, `"neu":"recovery"`, "data without its required new"},
		{"broken record", `"name":"quic:packet_sent"`, `"name":quic:packet_sent"`, "record 3 is not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(good, tc.from) {
				t.Fatalf("sample lacks %q", tc.from)
			}
			_, err := Check([]byte(strings.Replace(good, tc.from, tc.to, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := Check([]byte("{}\n")); err == nil {
		t.Fatal("a file without RS passed")
	}
}
