package qlog

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mpq/mpq/mpquic/internal/wire"
)

// buffer is an io.WriteCloser that records whether it was closed.
type buffer struct {
	bytes.Buffer
	closed bool
}

func (b *buffer) Close() error { b.closed = true; return nil }

var epoch = time.Date(2025, 3, 4, 5, 6, 7, 890123456, time.UTC)

// parseSeq parses a JSON text sequence strictly (RFC 7464): every record
// starts with RS (0x1E), ends with a line feed and holds one JSON text. It
// returns each record decoded as a generic JSON object.
func parseSeq(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	if len(b) == 0 || b[0] != 0x1e {
		t.Fatalf("sequence does not start with RS: %q", b[:min(len(b), 20)])
	}
	var out []map[string]any
	for i, rec := range bytes.Split(b[1:], []byte{0x1e}) {
		if len(rec) == 0 || rec[len(rec)-1] != '\n' {
			t.Fatalf("record %d does not end with a line feed: %q", i, rec)
		}
		if bytes.IndexByte(rec[:len(rec)-1], '\n') >= 0 {
			t.Fatalf("record %d spans lines: %q", i, rec)
		}
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(rec))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("record %d %q: %v", i, rec, err)
		}
		if dec.More() {
			t.Fatalf("record %d holds more than one JSON text: %q", i, rec)
		}
		out = append(out, m)
	}
	return out
}

// get walks a decoded JSON value along keys.
func get(t *testing.T, v any, keys ...string) any {
	t.Helper()
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%q: not an object: %v", k, v)
		}
		if v, ok = m[k]; !ok {
			t.Fatalf("no field %q in %v", k, m)
		}
	}
	return v
}

func TestHeader(t *testing.T) {
	var w buffer
	odcid := []byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4}
	tr := NewTrace(&w, "server", odcid, epoch, `title "quoted"`)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if !w.closed {
		t.Fatal("Close did not close the writer")
	}
	recs := parseSeq(t, w.Bytes())
	if len(recs) != 1 {
		t.Fatalf("%d records, want the header only", len(recs))
	}
	h := recs[0]
	tests := []struct {
		path []string
		want any
	}{
		{[]string{"file_schema"}, "urn:ietf:params:qlog:file:sequential"},
		{[]string{"serialization_format"}, "application/qlog+json-seq"},
		// qvis refuses a JSON-SEQ file without these.
		{[]string{"qlog_version"}, "0.3"},
		{[]string{"qlog_format"}, "JSON-SEQ"},
		{[]string{"title"}, `title "quoted"`},
		{[]string{"trace", "event_schemas"}, []any{EventSchema}},
		{[]string{"trace", "common_fields", "group_id"}, hex.EncodeToString(odcid)},
		{[]string{"trace", "common_fields", "time_format"}, "relative_to_epoch"},
		{[]string{"trace", "common_fields", "reference_time", "clock_type"}, "system"},
		{[]string{"trace", "vantage_point", "type"}, "server"},
	}
	for _, tt := range tests {
		if got := get(t, h, tt.path...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s = %#v, want %#v", strings.Join(tt.path, "."), got, tt.want)
		}
	}
	es := get(t, h, "trace", "common_fields", "reference_time", "epoch").(string)
	if got, err := time.Parse(time.RFC3339Nano, es); err != nil || !got.Equal(epoch) {
		t.Errorf("epoch %q (%v), want %v", es, err, epoch)
	}
}

// allEvents logs one event of every kind, with the name each should have.
func allEvents(tr *Trace, now time.Time) []string {
	at := func(ms int) time.Time { return now.Add(time.Duration(ms) * time.Millisecond) }
	h := PacketHeader{PacketType: "1RTT", PacketNumber: 7, HasPacketNumber: true, DCID: []byte{1, 2}, SCID: []byte{}}
	frames := []Frame{FrameFromWire(&wire.PingFrame{}), FrameFromWire(&wire.PaddingFrame{Length: 3})}
	tr.PacketSent(at(1), 0, h, 1200, frames)
	tr.PacketReceived(at(2), 1, PacketHeader{}, 50, nil)
	tr.PacketDropped(at(3), h, 33, "decryption_failure")
	tr.PacketDropped(at(3), PacketHeader{}, 33, `odd "reason"`)
	tr.PacketLost(at(4), 0, h, "reordering_threshold")
	tr.PacketLost(at(4), 0, h, "")
	tr.MetricsUpdated(at(5), 0, Metrics{CongestionWindow: 12000, BytesInFlight: 3000, SSThresh: 1 << 62,
		SmoothedRTT: 1500 * time.Microsecond, RTTVariance: time.Millisecond, MinRTT: time.Millisecond,
		LatestRTT: 2 * time.Millisecond, PTOCount: 2, HasPTOCount: true})
	tr.MetricsUpdated(at(5), 0, Metrics{CongestionWindow: 1, SSThresh: 2})
	tr.CongestionStateUpdated(at(6), 0, "slow_start", "recovery", "packet_loss")
	tr.LossTimerUpdated(at(7), 0, "set", "pto", 250*time.Microsecond)
	tr.LossTimerUpdated(at(7), 0, "expired", "ack", 0)
	tr.KeyUpdated(at(8), 1, "local_update")
	tr.KeyDiscarded(at(9), "initial")
	tr.ConnectionStarted(at(10), netip.MustParseAddrPort("10.0.0.1:443"), netip.MustParseAddrPort("[2001:db8::1]:5000"), []byte{1}, nil)
	tr.ConnectionClosed(at(11), "local", 0x0a, false, "bad\x00\"frame\"\xff", "")
	tr.ConnectionClosed(at(11), "remote", 0x42, true, "", "")
	tr.ParametersSet(at(12), "remote", []Param{{Key: "initial_max_data", Uint: 1 << 20},
		{Key: "disable_active_migration", IsBool: true, Bool: true},
		{Key: "stateless_reset_token", Hex: true, Bytes: []byte{0xab, 0xcd}}})
	tr.HyStartStep(at(13), 1, Metrics{CongestionWindow: 73900, BytesInFlight: 70000, SmoothedRTT: 60 * time.Millisecond},
		HyStart{Step: "round_ended", RoundMinRTT: 60220 * time.Microsecond, Samples: 14, Threshold: 67750 * time.Microsecond})
	tr.HyStartStep(at(14), 1, Metrics{CongestionWindow: 74000}, HyStart{Step: "css_entered", Samples: 8, CSS: true})
	return []string{"packet_sent", "packet_received", "packet_dropped", "packet_dropped",
		"packet_lost", "packet_lost", "recovery_metrics_updated", "recovery_metrics_updated",
		"congestion_state_updated", "timer_updated", "timer_updated", "key_updated", "key_updated",
		"key_discarded", "key_discarded", "connection_started", "connection_closed",
		"connection_closed", "parameters_set", "recovery_metrics_updated", "recovery_metrics_updated"}
}

func TestEvents(t *testing.T) {
	var w buffer
	tr := NewTrace(&w, "client", []byte{9}, epoch, "t")
	names := allEvents(tr, epoch)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	recs := parseSeq(t, w.Bytes())[1:]
	if len(recs) != len(names) {
		t.Fatalf("%d events, want %d", len(recs), len(names))
	}
	last := -1.0
	for i, r := range recs {
		if len(r) != 3 {
			t.Fatalf("event %d has fields %v, want time, name, data", i, r)
		}
		tm, err := get(t, r, "time").(json.Number).Float64()
		if err != nil || tm < last {
			t.Fatalf("event %d: time %v (%v) before %v", i, r["time"], err, last)
		}
		last = tm
		if got := get(t, r, "name"); got != "quic:"+names[i] {
			t.Errorf("event %d: name %v, want quic:%s", i, got, names[i])
		}
		if _, ok := get(t, r, "data").(map[string]any); !ok {
			t.Errorf("event %d: data is not an object", i)
		}
	}
	// Spot checks of values and of escaping.
	num := func(v any) string { return v.(json.Number).String() }
	checks := []struct {
		event int
		path  []string
		want  string
	}{
		{0, []string{"time"}, "1"},
		{0, []string{"data", "header", "packet_number"}, "7"},
		{0, []string{"data", "header", "dcid"}, "0102"},
		{0, []string{"data", "header", "scid"}, ""},
		{0, []string{"data", "raw", "length"}, "1200"},
		{1, []string{"data", "path_id"}, "1"},
		{1, []string{"data", "header", "packet_type"}, "unknown"},
		{2, []string{"data", "trigger"}, "decryption_failure"},
		{3, []string{"data", "trigger"}, "general"},
		{3, []string{"data", "details", "reason"}, `odd "reason"`},
		{4, []string{"data", "trigger"}, "reordering_threshold"},
		{6, []string{"data", "congestion_window"}, "12000"},
		{6, []string{"data", "bytes_in_flight"}, "3000"},
		{6, []string{"data", "smoothed_rtt"}, "1.5"},
		{6, []string{"data", "pto_count"}, "2"},
		{7, []string{"data", "ssthresh"}, "2"},
		{8, []string{"data", "new"}, "recovery"},
		{9, []string{"data", "delta"}, "0.25"},
		{15, []string{"data", "local", "ip_v4"}, "10.0.0.1"},
		{15, []string{"data", "remote", "ip_v6"}, "2001:db8::1"},
		{15, []string{"data", "remote", "port_v6"}, "5000"},
		{16, []string{"data", "connection_error"}, "protocol_violation"},
		{16, []string{"data", "reason"}, "bad\x00\"frame\"\ufffd"},
		{16, []string{"data", "trigger"}, "error"},
		{17, []string{"data", "trigger"}, "application"},
		{18, []string{"data", "initial_max_data"}, "1048576"},
		{18, []string{"data", "disable_active_migration"}, "true"},
		{18, []string{"data", "stateless_reset_token"}, "abcd"},
		{19, []string{"data", "path_id"}, "1"},
		{19, []string{"data", "congestion_window"}, "73900"},
		{19, []string{"data", "bytes_in_flight"}, "70000"},
		{19, []string{"data", "hystart_step"}, "round_ended"},
		{19, []string{"data", "hystart_round_min_rtt"}, "60.22"},
		{19, []string{"data", "hystart_round_samples"}, "14"},
		{19, []string{"data", "hystart_threshold"}, "67.75"},
		{19, []string{"data", "hystart_css"}, "false"},
		{20, []string{"data", "hystart_step"}, "css_entered"},
		{20, []string{"data", "hystart_css"}, "true"},
	}
	for _, c := range checks {
		v := get(t, recs[c.event], c.path...)
		var got string
		switch v := v.(type) {
		case string:
			got = v
		case bool:
			got = map[bool]string{true: "true", false: "false"}[v]
		default:
			got = num(v)
		}
		if got != c.want {
			t.Errorf("event %d (%s) %s = %q, want %q", c.event, names[c.event], strings.Join(c.path, "."), got, c.want)
		}
	}
	// Infinite ssthresh and unset RTTs are left out.
	for _, k := range []string{"ssthresh"} {
		if _, ok := get(t, recs[6], "data").(map[string]any)[k]; ok {
			t.Errorf("event 6 has %s", k)
		}
	}
	for _, k := range []string{"min_rtt", "latest_rtt", "pto_count"} {
		if _, ok := get(t, recs[7], "data").(map[string]any)[k]; ok {
			t.Errorf("event 7 has %s", k)
		}
	}
	// A step without a round minimum or a threshold leaves them out.
	for _, k := range []string{"hystart_round_min_rtt", "hystart_threshold"} {
		if _, ok := get(t, recs[20], "data").(map[string]any)[k]; ok {
			t.Errorf("event 20 has %s", k)
		}
	}
}

// countingWriter counts the Write calls it receives.
type countingWriter struct {
	buffer
	writes int
}

func (c *countingWriter) Write(p []byte) (int, error) { c.writes++; return c.buffer.Write(p) }

// TestEventsWrittenAsTheyHappen: every event reaches the writer at once,
// as one Write of one whole record, not when the trace closes (issue 14:
// traces stayed empty until the connection closed, so a long run or a
// crash left nothing).
func TestEventsWrittenAsTheyHappen(t *testing.T) {
	w := &countingWriter{}
	tr := NewTrace(w, "client", []byte{1}, epoch, "t")
	if w.writes != 1 || len(parseSeq(t, w.Bytes())) != 1 {
		t.Fatalf("header: %d writes, %q", w.writes, w.Bytes())
	}
	for i := 1; i <= 3; i++ {
		tr.PacketSent(epoch.Add(time.Duration(i)*time.Millisecond), 0, PacketHeader{PacketType: "1RTT"}, 1200, nil)
		if w.writes != 1+i {
			t.Fatalf("after event %d: %d writes", i, w.writes)
		}
		if recs := parseSeq(t, w.Bytes()); len(recs) != 1+i {
			t.Fatalf("after event %d the writer holds %d records", i, len(recs))
		}
	}
	if err := tr.Close(); err != nil || !w.closed {
		t.Fatalf("Close: %v, closed %v", err, w.closed)
	}
}

func TestNilTraceIsNoOp(t *testing.T) {
	var tr *Trace
	allEvents(tr, epoch)
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
}

// failingWriter fails every write.
type failingWriter struct{ closed bool }

func (f *failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
func (f *failingWriter) Close() error              { f.closed = true; return nil }

func TestWriteErrorIsReported(t *testing.T) {
	w := &failingWriter{}
	tr := NewTrace(w, "client", nil, epoch, "t")
	allEvents(tr, epoch)
	if err := tr.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close: %v, want the write error", err)
	}
	if tr.Err() == nil || !w.closed {
		t.Fatalf("Err %v, writer closed %v", tr.Err(), w.closed)
	}
}

func TestAppendString(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello", "hello"},
		{"empty", "", ""},
		{"quote and backslash", `a"b\c`, `a"b\c`},
		{"whitespace controls", "a\nb\rc\td", "a\nb\rc\td"},
		{"other controls", "\x00\x01\x1b\x1f\x7f", "\x00\x01\x1b\x1f\x7f"},
		{"record separator", "a\x1eb", "a\x1eb"},
		{"multibyte", "é€😀", "é€😀"},
		{"line separators", "\u2028\u2029", "\u2028\u2029"},
		{"invalid byte", "a\xffb", "a\ufffdb"},
		{"truncated sequence", "a\xe2\x82", "a\ufffd\ufffd"},
		{"surrogate half", "\xed\xa0\x80", "\ufffd\ufffd\ufffd"},
		{"literal replacement character", "\ufffd", "\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := appendString(nil, tt.in)
			if !json.Valid(b) {
				t.Fatalf("%q is not valid JSON", b)
			}
			if bytes.IndexByte(b, 0x1e) >= 0 || bytes.IndexByte(b, '\n') >= 0 {
				t.Fatalf("%q holds a raw RS or line feed", b)
			}
			var got string
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("%q decodes to %q, want %q", b, got, tt.want)
			}
		})
	}
}

// otherFrame is a frame type FrameFromWire does not know.
type otherFrame struct{}

func (otherFrame) Type() uint64           { return 0x4242 }
func (otherFrame) Len() int               { return 0 }
func (otherFrame) Append(b []byte) []byte { return b }

func TestFrameFromWire(t *testing.T) {
	cid := []byte{0xc0, 0xc1, 0xc2, 0xc3}
	var token [16]byte
	token[0] = 0x77
	tests := []struct {
		f    wire.Frame
		want string // the frame's JSON, as encoding/json re-encodes it
	}{
		{&wire.PaddingFrame{Length: 5}, `{"frame_type":"padding","raw":{"payload_length":5}}`},
		{&wire.PingFrame{}, `{"frame_type":"ping"}`},
		{&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 8, Largest: 10}, {Smallest: 2, Largest: 2}}, AckDelay: 17},
			`{"ack_delay_raw":17,"acked_ranges":[[2],[8,10]],"frame_type":"ack"}`},
		{&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 0, Largest: 3}}, HasECN: true, ECT0: 1, ECT1: 2, CE: 3},
			`{"ack_delay_raw":0,"acked_ranges":[[0,3]],"ce":3,"ect0":1,"ect1":2,"frame_type":"ack"}`},
		{&wire.ResetStreamFrame{StreamID: 4, ErrorCode: 9, FinalSize: 100},
			`{"error":"unknown","error_code":9,"final_size":100,"frame_type":"reset_stream","stream_id":4}`},
		{&wire.StopSendingFrame{StreamID: 8, ErrorCode: 1},
			`{"error":"unknown","error_code":1,"frame_type":"stop_sending","stream_id":8}`},
		{&wire.CryptoFrame{Offset: 6, Data: []byte("hello")}, `{"frame_type":"crypto","offset":6,"raw":{"length":5}}`},
		{&wire.NewTokenFrame{Token: []byte{1, 2}}, `{"frame_type":"new_token","token_data":"0102"}`},
		{&wire.StreamFrame{StreamID: 0, Data: []byte("x")}, `{"frame_type":"stream","offset":0,"raw":{"length":1},"stream_id":0}`},
		{&wire.StreamFrame{StreamID: 1, Fin: true}, `{"fin":true,"frame_type":"stream","offset":0,"raw":{"length":0},"stream_id":1}`},
		{&wire.StreamFrame{StreamID: 2, DataLenPresent: true, Data: []byte("ab")}, `{"frame_type":"stream","offset":0,"raw":{"length":2},"stream_id":2}`},
		{&wire.StreamFrame{StreamID: 3, DataLenPresent: true, Fin: true}, `{"fin":true,"frame_type":"stream","offset":0,"raw":{"length":0},"stream_id":3}`},
		{&wire.StreamFrame{StreamID: 4, Offset: 9, Data: []byte("abc")}, `{"frame_type":"stream","offset":9,"raw":{"length":3},"stream_id":4}`},
		{&wire.StreamFrame{StreamID: 5, Offset: 9, Fin: true}, `{"fin":true,"frame_type":"stream","offset":9,"raw":{"length":0},"stream_id":5}`},
		{&wire.StreamFrame{StreamID: 6, Offset: 9, DataLenPresent: true}, `{"frame_type":"stream","offset":9,"raw":{"length":0},"stream_id":6}`},
		{&wire.StreamFrame{StreamID: 7, Offset: 9, DataLenPresent: true, Fin: true, Data: []byte("z")}, `{"fin":true,"frame_type":"stream","offset":9,"raw":{"length":1},"stream_id":7}`},
		{&wire.MaxDataFrame{Max: 1 << 40}, `{"frame_type":"max_data","maximum":1099511627776}`},
		{&wire.MaxStreamDataFrame{StreamID: 4, Max: 99}, `{"frame_type":"max_stream_data","maximum":99,"stream_id":4}`},
		{&wire.MaxStreamsFrame{Bidi: true, Max: 10}, `{"frame_type":"max_streams","maximum":10,"stream_type":"bidirectional"}`},
		{&wire.MaxStreamsFrame{Max: 11}, `{"frame_type":"max_streams","maximum":11,"stream_type":"unidirectional"}`},
		{&wire.DataBlockedFrame{Limit: 5}, `{"frame_type":"data_blocked","limit":5}`},
		{&wire.StreamDataBlockedFrame{StreamID: 4, Limit: 6}, `{"frame_type":"stream_data_blocked","limit":6,"stream_id":4}`},
		{&wire.StreamsBlockedFrame{Bidi: true, Limit: 7}, `{"frame_type":"streams_blocked","limit":7,"stream_type":"bidirectional"}`},
		{&wire.StreamsBlockedFrame{Limit: 8}, `{"frame_type":"streams_blocked","limit":8,"stream_type":"unidirectional"}`},
		{&wire.NewConnectionIDFrame{Seq: 2, RetirePriorTo: 1, ConnID: cid, ResetToken: token},
			`{"connection_id":"c0c1c2c3","frame_type":"new_connection_id","retire_prior_to":1,"sequence_number":2,"stateless_reset_token":"77000000000000000000000000000000"}`},
		{&wire.RetireConnectionIDFrame{Seq: 3}, `{"frame_type":"retire_connection_id","sequence_number":3}`},
		{&wire.PathChallengeFrame{Data: [8]byte{1, 2, 3, 4, 5, 6, 7, 8}}, `{"data":"0102030405060708","frame_type":"path_challenge"}`},
		{&wire.PathResponseFrame{Data: [8]byte{8, 7, 6, 5, 4, 3, 2, 1}}, `{"data":"0807060504030201","frame_type":"path_response"}`},
		{&wire.ConnectionCloseFrame{ErrorCode: 0x0a, FrameType: 0x08, Reason: []byte("bad \"stream\"\n\xff")},
			`{"error":"protocol_violation","error_code":10,"error_space":"transport","frame_type":"connection_close","reason":"bad \"stream\"\n` + "\ufffd" + `","trigger_frame_type":8}`},
		{&wire.ConnectionCloseFrame{IsApplication: true, ErrorCode: 0x100},
			`{"error":"unknown","error_code":256,"error_space":"application","frame_type":"connection_close","reason":""}`},
		{&wire.HandshakeDoneFrame{}, `{"frame_type":"handshake_done"}`},
		{&wire.PathAckFrame{PathID: 1, Ranges: []wire.AckRange{{Smallest: 5, Largest: 5}}, AckDelay: 3},
			`{"ack_delay_raw":3,"acked_ranges":[[5]],"frame_type":"path_ack","path_id":1}`},
		{&wire.PathAckFrame{PathID: 2, Ranges: []wire.AckRange{{Smallest: 1, Largest: 4}}, HasECN: true, ECT0: 1},
			`{"ack_delay_raw":0,"acked_ranges":[[1,4]],"frame_type":"path_ack","path_id":2}`},
		{&wire.PathAbandonFrame{PathID: 1, ErrorCode: 4}, `{"error_code":4,"frame_type":"path_abandon","path_id":1}`},
		{&wire.PathStatusFrame{Backup: true, PathID: 1, StatusSeq: 2}, `{"frame_type":"path_status_backup","path_id":1,"path_status_sequence_number":2}`},
		{&wire.PathStatusFrame{PathID: 1, StatusSeq: 3}, `{"frame_type":"path_status_available","path_id":1,"path_status_sequence_number":3}`},
		{&wire.PathNewConnectionIDFrame{PathID: 1, Seq: 2, RetirePriorTo: 1, ConnID: cid, ResetToken: token},
			`{"connection_id":"c0c1c2c3","frame_type":"path_new_connection_id","path_id":1,"retire_prior_to":1,"sequence_number":2}`},
		{&wire.PathRetireConnectionIDFrame{PathID: 1, Seq: 2}, `{"frame_type":"path_retire_connection_id","path_id":1,"sequence_number":2}`},
		{&wire.MaxPathIDFrame{MaxPathID: 4}, `{"frame_type":"max_path_id","maximum_path_id":4}`},
		{&wire.PathsBlockedFrame{MaxPathID: 4}, `{"frame_type":"paths_blocked","maximum_path_id":4}`},
		{&wire.PathCIDsBlockedFrame{PathID: 1, NextSeq: 5}, `{"frame_type":"path_cids_blocked","next_sequence_number":5,"path_id":1}`},
	}
	seen := map[uint64]bool{}
	for _, tt := range tests {
		seen[tt.f.Type()] = true
		t.Run(tt.want, func(t *testing.T) {
			// Convert the parsed form, whose slices alias the packet,
			// then overwrite the packet: the qlog frame must not change.
			enc := tt.f.Append(nil)
			wf, n, err := wire.ParseFrame(enc)
			if err != nil || n != len(enc) {
				t.Fatalf("parse %x: %d bytes, %v", enc, n, err)
			}
			qf := FrameFromWire(wf)
			for i := range enc {
				enc[i] = 0xff
			}
			b := qf.appendJSON(nil)
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			got, _ := json.Marshal(v)
			if string(got) != tt.want {
				t.Fatalf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	// Every frame type on the wire is covered.
	var all []uint64
	for ft := wire.FrameTypePadding; ft <= wire.FrameTypeHandshakeDone; ft++ {
		all = append(all, ft)
	}
	all = append(all, wire.FrameTypePathAck, wire.FrameTypePathAckECN)
	for ft := wire.FrameTypePathAbandon; ft <= wire.FrameTypePathCIDsBlocked; ft++ {
		all = append(all, ft)
	}
	for _, ft := range all {
		if !seen[ft] {
			t.Errorf("frame type %#x not tested", ft)
		}
	}

	t.Run("unknown", func(t *testing.T) {
		f := FrameFromWire(otherFrame{})
		got := string(f.appendJSON(nil))
		if want := `{"frame_type":"unknown","frame_type_bytes":16962}`; got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	})
}

// TestFramesInPacketEvents checks that frames of every kind serialise into
// a valid packet_sent record.
func TestFramesInPacketEvents(t *testing.T) {
	frames := []Frame{
		FrameFromWire(&wire.StreamFrame{StreamID: 4, Data: []byte("abc"), Fin: true}),
		FrameFromWire(&wire.AckFrame{Ranges: []wire.AckRange{{Smallest: 1, Largest: 9}}}),
		FrameFromWire(&wire.ConnectionCloseFrame{ErrorCode: 1, Reason: []byte("\x1e\n\"")}),
		FrameFromWire(otherFrame{}),
		{FrameType: "padding", Length: 100},
	}
	var w buffer
	tr := NewTrace(&w, "client", nil, epoch, "t")
	tr.PacketSent(epoch, 0, PacketHeader{PacketType: "initial"}, 1200, frames)
	tr.PacketSent(epoch, 0, PacketHeader{PacketType: "initial"}, 1200, []Frame{})
	tr.Close()
	recs := parseSeq(t, w.Bytes())
	fs := get(t, recs[1], "data", "frames").([]any)
	if len(fs) != len(frames) {
		t.Fatalf("%d frames logged, want %d", len(fs), len(frames))
	}
	for i, f := range fs {
		if got := get(t, f, "frame_type"); got != frames[i].FrameType {
			t.Errorf("frame %d: type %v, want %s", i, got, frames[i].FrameType)
		}
	}
	if got := get(t, fs[2], "reason"); got != "\x1e\n\"" {
		t.Errorf("reason %q", got)
	}
	if fs := get(t, recs[2], "data", "frames").([]any); len(fs) != 0 {
		t.Errorf("empty frame list logged as %v", fs)
	}
}
