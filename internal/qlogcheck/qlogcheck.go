// Package qlogcheck checks a JSON-SEQ qlog trace (.sqlog) the way the
// tools that read mpq's traces do: qvis's loader (quiclog/qvis,
// TextSequenceJSONToQlog and QlogLoaderV2, 2025) and the qlog drafts
// (draft-ietf-quic-qlog-main-schema, draft-ietf-quic-qlog-quic-events:
// the file header, the trace's required fields, RFC 7464 records, the
// event names and their required data fields). Tests use it on the traces
// the stack writes.
package qlogcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// qvisVersions are the qlog_version values qvis accepts for a JSON-SEQ
// file (QlogSchema02.Defaults.versionAliases).
var qvisVersions = []string{"draft-02", "draft-02-RC1", "qlog-03-WIP", "0.3"}

// EventNames are the event names of draft-ietf-quic-qlog-quic-events
// (its "QUIC Events" table).
var EventNames = []string{
	"quic:server_listening", "quic:connection_started", "quic:connection_closed",
	"quic:connection_id_updated", "quic:spin_bit_updated", "quic:connection_state_updated",
	"quic:tuple_assigned", "quic:mtu_updated", "quic:version_information",
	"quic:alpn_information", "quic:parameters_set", "quic:parameters_restored",
	"quic:packet_sent", "quic:packet_received", "quic:packet_dropped",
	"quic:packet_buffered", "quic:packets_acked", "quic:udp_datagrams_sent",
	"quic:udp_datagrams_received", "quic:udp_datagram_dropped", "quic:stream_state_updated",
	"quic:frames_created", "quic:frames_parsed", "quic:stream_data_moved",
	"quic:datagram_data_moved", "quic:connection_data_blocked_updated",
	"quic:stream_data_blocked_updated", "quic:datagram_data_blocked_updated",
	"quic:migration_state_updated", "quic:timer_updated", "quic:key_updated",
	"quic:key_discarded", "quic:recovery_parameters_set", "quic:recovery_metrics_updated",
	"quic:congestion_state_updated", "quic:packet_lost", "quic:marked_for_retransmit",
	"quic:ecn_state_updated",
}

// requiredData lists the data fields an event type requires (the fields
// without "?" in its CDDL).
var requiredData = map[string][]string{
	"quic:packet_sent":              {"header"},
	"quic:packet_received":          {"header"},
	"quic:congestion_state_updated": {"new"},
	"quic:timer_updated":            {"event_type"},
	"quic:key_updated":              {"key_type"},
	"quic:key_discarded":            {"key_type"},
	"quic:connection_started":       {"local", "remote"},
	"quic:tuple_assigned":           {"tuple_id"},
}

// Trace is what a check found in a trace.
type Trace struct {
	// Header is the first record.
	Header map[string]any
	// Events are the event records in order.
	Events []map[string]any
	// Counts counts the events by name.
	Counts map[string]int
	// VantagePoint is the trace's vantage_point.type.
	VantagePoint string
}

// Check parses a whole trace file and returns every problem found, joined.
func Check(data []byte) (*Trace, error) {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	// RFC 7464 as the qlog draft maps it: every record starts with RS and
	// ends with a line feed.
	if len(data) == 0 || data[0] != 0x1e {
		return nil, errors.New("the file does not start with a record separator (0x1E)")
	}
	raw := bytes.Split(data[1:], []byte{0x1e})
	var recs []map[string]any
	for i, r := range raw {
		if len(r) == 0 || r[len(r)-1] != '\n' {
			fail("record %d does not end with a line feed", i)
		}
		// qvis trims each record and JSON.parses it; a record that does not
		// parse ends its loading of the file.
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(r)))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			fail("record %d is not a JSON object: %v", i, err)
			return nil, errors.Join(errs...)
		}
		if dec.More() {
			fail("record %d holds more than one JSON text", i)
		}
		recs = append(recs, m)
	}
	tr := &Trace{Header: recs[0], Events: recs[1:], Counts: map[string]int{}}
	checkHeader(tr, fail)
	checkEvents(tr, fail)
	for i, r := range recs {
		checkLowercase(r, fmt.Sprintf("record %d", i), fail)
	}
	return tr, errors.Join(errs...)
}

func checkHeader(tr *Trace, fail func(string, ...any)) {
	h := tr.Header
	// qvis: header.qlog_version defined (and a version it knows),
	// header.qlog_format === "JSON-SEQ", header.trace defined.
	if v, _ := h["qlog_version"].(string); !slices.Contains(qvisVersions, v) {
		fail("header: qlog_version %v is not one qvis loads (%s)", h["qlog_version"], strings.Join(qvisVersions, ", "))
	}
	if h["qlog_format"] != "JSON-SEQ" {
		fail(`header: qlog_format %v, qvis needs "JSON-SEQ"`, h["qlog_format"])
	}
	// The draft's QlogFileSeq.
	if h["file_schema"] != "urn:ietf:params:qlog:file:sequential" {
		fail("header: file_schema %v", h["file_schema"])
	}
	if f, _ := h["serialization_format"].(string); !strings.EqualFold(f, "application/qlog+json-seq") {
		fail("header: serialization_format %v", h["serialization_format"])
	}
	trace, ok := h["trace"].(map[string]any)
	if !ok {
		fail("header: no trace object")
		return
	}
	schemas, _ := trace["event_schemas"].([]any)
	if len(schemas) == 0 {
		fail("trace: event_schemas missing or empty")
	}
	for _, s := range schemas {
		if str, _ := s.(string); !strings.HasPrefix(str, "urn:ietf:params:qlog:events:quic-") {
			fail("trace: event schema %v is not a draft version of urn:ietf:params:qlog:events:quic", s)
		}
	}
	vp, _ := trace["vantage_point"].(map[string]any)
	tr.VantagePoint, _ = vp["type"].(string)
	if !slices.Contains([]string{"client", "server", "network", "unknown"}, tr.VantagePoint) {
		fail("trace: vantage_point.type %v", vp["type"])
	}
	cf, _ := trace["common_fields"].(map[string]any)
	if tf, ok := cf["time_format"]; ok && tf != "relative_to_epoch" && tf != "relative_to_previous_event" {
		fail("trace: time_format %v", tf)
	}
	if rt, ok := cf["reference_time"].(map[string]any); ok {
		if _, ok := rt["clock_type"].(string); !ok {
			fail("trace: reference_time without clock_type")
		}
		switch ep := rt["epoch"].(type) {
		case string:
			if _, err := time.Parse(time.RFC3339Nano, ep); err != nil && ep != "unknown" {
				fail("trace: reference_time.epoch %q is not RFC 3339", ep)
			}
		default:
			fail("trace: reference_time without epoch")
		}
	}
}

func checkEvents(tr *Trace, fail func(string, ...any)) {
	last := -1.0
	for i, e := range tr.Events {
		where := fmt.Sprintf("event %d", i+1)
		num, ok := e["time"].(json.Number)
		if !ok {
			fail("%s: time %v is not a number", where, e["time"])
			continue
		}
		t, err := num.Float64()
		if err != nil {
			fail("%s: time %v", where, num)
		}
		// qvis sorts a trace whose times go back and warns that the
		// qlog drafts require ascending times.
		if t < last {
			fail("%s: time %v before the previous event's %v", where, t, last)
		}
		last = t
		name, _ := e["name"].(string)
		if !slices.Contains(EventNames, name) {
			fail("%s: name %q is not an event of draft-ietf-quic-qlog-quic-events", where, e["name"])
		}
		tr.Counts[name]++
		data, ok := e["data"].(map[string]any)
		if !ok {
			fail("%s (%s): data is not an object", where, name)
			continue
		}
		for _, k := range requiredData[name] {
			if _, ok := data[k]; !ok {
				fail("%s (%s): data without its required %s", where, name, k)
			}
		}
		if h, ok := data["header"].(map[string]any); ok {
			if _, ok := h["packet_type"].(string); !ok {
				fail("%s (%s): header without packet_type", where, name)
			}
		}
	}
}

// checkLowercase: the draft requires lowercase field names in JSON-SEQ.
func checkLowercase(v any, where string, fail func(string, ...any)) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if strings.IndexFunc(k, unicode.IsUpper) >= 0 {
				fail("%s: field name %q is not lowercase", where, k)
			}
			checkLowercase(x, where, fail)
		}
	case []any:
		for _, x := range t {
			checkLowercase(x, where, fail)
		}
	}
}
