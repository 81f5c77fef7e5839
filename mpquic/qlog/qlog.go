// Package qlog writes qlog traces of mpquic connections as JSON text
// sequences (RFC 7464, the "sequential" qlog file schema of
// draft-ietf-quic-qlog-main-schema), with the event names and fields of
// draft-ietf-quic-qlog-quic-events (the version after draft 12, identified
// as quic-13). Multipath events carry the path in an extension field
// "path_id".
//
// The header also carries "qlog_version": "0.3" and "qlog_format":
// "JSON-SEQ", which the qlog drafts no longer define but qvis requires
// before it loads a JSON-SEQ file.
//
// A nil *Trace is valid and logs nothing, so callers need not check whether
// tracing is on. A Trace is not safe for concurrent use: it belongs to one
// connection. Each event is handed to the writer as it happens, as one
// Write of one whole record; the writer decides when it reaches storage
// (the commands' writer, internal/qlogfile, buffers and writes at least
// every second). A Trace never reads the clock: times come from its caller.
package qlog

import (
	"encoding/hex"
	"io"
	"net/netip"
	"strconv"
	"time"
	"unicode/utf8"
)

// EventSchema identifies the QUIC event definitions the traces follow.
const EventSchema = "urn:ietf:params:qlog:events:quic-13"

// VantagePoint is "client" or "server".
type VantagePoint string

// Trace is the qlog trace of one connection.
type Trace struct {
	w     io.WriteCloser
	start time.Time
	buf   []byte
	err   error
}

// NewTrace starts a trace on w with its header. Times in events are
// milliseconds since now, which is recorded as the reference epoch. odcid
// (the client's original destination connection ID) becomes the group_id.
func NewTrace(w io.WriteCloser, vp VantagePoint, odcid []byte, now time.Time, title string) *Trace {
	t := &Trace{w: w, start: now}
	b := t.buf[:0]
	b = append(b, 0x1e)
	b = append(b, `{"file_schema":"urn:ietf:params:qlog:file:sequential","serialization_format":"application/qlog+json-seq",`...)
	b = append(b, `"qlog_version":"0.3","qlog_format":"JSON-SEQ","title":`...)
	b = appendString(b, title)
	b = append(b, `,"trace":{"common_fields":{"group_id":"`...)
	b = hex.AppendEncode(b, odcid)
	b = append(b, `","time_format":"relative_to_epoch","reference_time":{"clock_type":"system","epoch":"`...)
	b = now.UTC().AppendFormat(b, "2006-01-02T15:04:05.000000000Z07:00")
	b = append(b, `"}},"vantage_point":{"name":"mpquic","type":`...)
	b = appendString(b, string(vp))
	b = append(b, `},"event_schemas":["`+EventSchema+`"]}}`+"\n"...)
	t.write(b)
	return t
}

func (t *Trace) write(b []byte) {
	t.buf = b[:0]
	if t.err != nil {
		return
	}
	_, t.err = t.w.Write(b)
}

// begin starts an event record.
func (t *Trace) begin(now time.Time, name string) []byte {
	b := t.buf[:0]
	b = append(b, 0x1e)
	b = append(b, `{"time":`...)
	ms := float64(now.Sub(t.start)) / float64(time.Millisecond)
	b = strconv.AppendFloat(b, ms, 'f', -1, 64)
	b = append(b, `,"name":"quic:`...)
	b = append(b, name...)
	b = append(b, `","data":{`...)
	return b
}

func (t *Trace) end(b []byte) {
	b = append(b, "}}\n"...)
	t.write(b)
}

// Close closes the trace's writer.
func (t *Trace) Close() error {
	if t == nil {
		return nil
	}
	if err := t.w.Close(); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
}

// Err returns the first write error, if any.
func (t *Trace) Err() error {
	if t == nil {
		return nil
	}
	return t.err
}

// PacketHeader is the qlog PacketHeader of a packet.
type PacketHeader struct {
	PacketType      string
	PacketNumber    uint64
	HasPacketNumber bool
	DCID, SCID      []byte
}

func appendHeader(b []byte, h PacketHeader) []byte {
	b = append(b, `"header":{"packet_type":`...)
	pt := h.PacketType
	if pt == "" {
		pt = "unknown"
	}
	b = appendString(b, pt)
	if h.HasPacketNumber {
		b = append(b, `,"packet_number":`...)
		b = strconv.AppendUint(b, h.PacketNumber, 10)
	}
	if h.SCID != nil {
		b = append(b, `,"scid":"`...)
		b = hex.AppendEncode(b, h.SCID)
		b = append(b, '"')
	}
	if h.DCID != nil {
		b = append(b, `,"dcid":"`...)
		b = hex.AppendEncode(b, h.DCID)
		b = append(b, '"')
	}
	return append(b, '}')
}

func appendPathID(b []byte, pathID uint64) []byte {
	b = append(b, `,"path_id":`...)
	return strconv.AppendUint(b, pathID, 10)
}

func appendFrames(b []byte, frames []Frame) []byte {
	b = append(b, `,"frames":[`...)
	for i := range frames {
		if i > 0 {
			b = append(b, ',')
		}
		b = frames[i].appendJSON(b)
	}
	return append(b, ']')
}

func appendRaw(b []byte, size int) []byte {
	b = append(b, `,"raw":{"length":`...)
	b = strconv.AppendInt(b, int64(size), 10)
	return append(b, '}')
}

// PacketSent logs quic:packet_sent.
func (t *Trace) PacketSent(now time.Time, pathID uint64, h PacketHeader, size int, frames []Frame) {
	t.packet(now, "packet_sent", pathID, h, size, frames)
}

// PacketSentCopy logs quic:packet_sent for a copy of a packet sent on
// another path (a path scheduler's redundancy): besides the fields of
// PacketSent, the event's data has "duplicate_of" {"path_id",
// "packet_number"} naming the original (an mpq extension field).
func (t *Trace) PacketSentCopy(now time.Time, pathID uint64, h PacketHeader, size int, frames []Frame, origPath, origPN uint64) {
	if t == nil {
		return
	}
	b := t.begin(now, "packet_sent")
	b = appendHeader(b, h)
	b = appendPathID(b, pathID)
	b = appendRaw(b, size)
	if frames != nil {
		b = appendFrames(b, frames)
	}
	b = append(b, `,"duplicate_of":{"path_id":`...)
	b = strconv.AppendUint(b, origPath, 10)
	b = append(b, `,"packet_number":`...)
	b = strconv.AppendUint(b, origPN, 10)
	b = append(b, '}')
	t.end(b)
}

// PacketReceived logs quic:packet_received.
func (t *Trace) PacketReceived(now time.Time, pathID uint64, h PacketHeader, size int, frames []Frame) {
	t.packet(now, "packet_received", pathID, h, size, frames)
}

func (t *Trace) packet(now time.Time, name string, pathID uint64, h PacketHeader, size int, frames []Frame) {
	if t == nil {
		return
	}
	b := t.begin(now, name)
	b = appendHeader(b, h)
	b = appendPathID(b, pathID)
	b = appendRaw(b, size)
	if frames != nil {
		b = appendFrames(b, frames)
	}
	t.end(b)
}

// PacketDropped logs quic:packet_dropped. trigger is a qlog trigger
// ("decryption_failure", "duplicate", ...) or, for reasons qlog does not
// name, a detail recorded under details.reason with trigger "general".
func (t *Trace) PacketDropped(now time.Time, h PacketHeader, size int, trigger string) {
	if t == nil {
		return
	}
	b := t.begin(now, "packet_dropped")
	b = appendHeader(b, h)
	b = appendRaw(b, size)
	switch trigger {
	case "internal_error", "rejected", "unsupported", "invalid", "duplicate",
		"connection_unknown", "decryption_failure", "key_unavailable", "general":
		b = append(b, `,"trigger":`...)
		b = appendString(b, trigger)
	default:
		b = append(b, `,"trigger":"general","details":{"reason":`...)
		b = appendString(b, trigger)
		b = append(b, '}')
	}
	t.end(b)
}

// PacketLost logs quic:packet_lost.
func (t *Trace) PacketLost(now time.Time, pathID uint64, h PacketHeader, trigger string) {
	if t == nil {
		return
	}
	b := t.begin(now, "packet_lost")
	b = appendHeader(b, h)
	b = appendPathID(b, pathID)
	if trigger != "" {
		b = append(b, `,"trigger":`...)
		b = appendString(b, trigger)
	}
	t.end(b)
}

// Metrics are the recovery metrics of one path.
type Metrics struct {
	CongestionWindow, BytesInFlight, SSThresh   uint64
	SmoothedRTT, MinRTT, LatestRTT, RTTVariance time.Duration
	PTOCount                                    int
	HasPTOCount                                 bool
}

func appendMs(b []byte, key string, d time.Duration) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendFloat(b, float64(d)/float64(time.Millisecond), 'f', -1, 64)
}

func appendUint(b []byte, key string, v uint64) []byte {
	b = append(b, ',', '"')
	b = append(b, key...)
	b = append(b, '"', ':')
	return strconv.AppendUint(b, v, 10)
}

// MetricsUpdated logs quic:recovery_metrics_updated for a path.
func (t *Trace) MetricsUpdated(now time.Time, pathID uint64, m Metrics) {
	if t == nil {
		return
	}
	t.end(t.metrics(now, pathID, m))
}

// HyStart is a step of HyStart++ (RFC 9406) in a path's initial slow
// start: Step names it ("round_ended", "css_entered", "css_left",
// "exited"), RoundMinRTT and Samples are the minimum RTT and number of
// RTT samples of the round it concerns, Threshold the RTT the step sets
// (omitted when 0), CSS whether Conservative Slow Start holds after it.
type HyStart struct {
	Step                   string
	RoundMinRTT, Threshold time.Duration
	Samples                int
	CSS                    bool
}

// HyStartStep logs a step of HyStart++ as quic:recovery_metrics_updated
// for a path: the path's metrics, and the step in the extension fields
// hystart_step, hystart_round_min_rtt (ms, omitted without a sample),
// hystart_round_samples, hystart_threshold (ms, omitted when 0) and
// hystart_css.
func (t *Trace) HyStartStep(now time.Time, pathID uint64, m Metrics, h HyStart) {
	if t == nil {
		return
	}
	b := t.metrics(now, pathID, m)
	b = append(b, `,"hystart_step":`...)
	b = appendString(b, h.Step)
	if h.RoundMinRTT > 0 {
		b = appendMs(b, "hystart_round_min_rtt", h.RoundMinRTT)
	}
	b = appendUint(b, "hystart_round_samples", uint64(h.Samples))
	if h.Threshold > 0 {
		b = appendMs(b, "hystart_threshold", h.Threshold)
	}
	b = append(b, `,"hystart_css":`...)
	b = strconv.AppendBool(b, h.CSS)
	t.end(b)
}

// metrics begins a quic:recovery_metrics_updated event with m's fields.
func (t *Trace) metrics(now time.Time, pathID uint64, m Metrics) []byte {
	b := t.begin(now, "recovery_metrics_updated")
	b = append(b, `"path_id":`...)
	b = strconv.AppendUint(b, pathID, 10)
	b = appendUint(b, "congestion_window", m.CongestionWindow)
	b = appendUint(b, "bytes_in_flight", m.BytesInFlight)
	if m.SSThresh != 0 && m.SSThresh < 1<<62 {
		b = appendUint(b, "ssthresh", m.SSThresh)
	}
	b = appendMs(b, "smoothed_rtt", m.SmoothedRTT)
	b = appendMs(b, "rtt_variance", m.RTTVariance)
	if m.MinRTT > 0 {
		b = appendMs(b, "min_rtt", m.MinRTT)
	}
	if m.LatestRTT > 0 {
		b = appendMs(b, "latest_rtt", m.LatestRTT)
	}
	if m.HasPTOCount {
		b = appendUint(b, "pto_count", uint64(m.PTOCount))
	}
	return b
}

// CongestionStateUpdated logs quic:congestion_state_updated for a path.
func (t *Trace) CongestionStateUpdated(now time.Time, pathID uint64, old, new, trigger string) {
	if t == nil {
		return
	}
	b := t.begin(now, "congestion_state_updated")
	b = append(b, `"path_id":`...)
	b = strconv.AppendUint(b, pathID, 10)
	b = append(b, `,"old":`...)
	b = appendString(b, old)
	b = append(b, `,"new":`...)
	b = appendString(b, new)
	if trigger != "" {
		b = append(b, `,"trigger":`...)
		b = appendString(b, trigger)
	}
	t.end(b)
}

// LossTimerUpdated logs quic:timer_updated for the loss detection timer
// of a path: eventType is "set", "expired" or "cancelled", timerType "ack"
// (time threshold) or "pto"; delta is the time to expiry of a set timer.
func (t *Trace) LossTimerUpdated(now time.Time, pathID uint64, eventType, timerType string, delta time.Duration) {
	if t == nil {
		return
	}
	b := t.begin(now, "timer_updated")
	b = append(b, `"event_type":`...)
	b = appendString(b, eventType)
	b = append(b, `,"timer_type":`...)
	b = appendString(b, timerType)
	b = appendPathID(b, pathID)
	if eventType == "set" {
		b = appendMs(b, "delta", delta)
	}
	t.end(b)
}

// KeyUpdated logs quic:key_updated for the 1-RTT keys.
func (t *Trace) KeyUpdated(now time.Time, phase uint64, trigger string) {
	if t == nil {
		return
	}
	for _, kt := range []string{"client_1rtt_secret", "server_1rtt_secret"} {
		b := t.begin(now, "key_updated")
		b = append(b, `"key_type":`...)
		b = appendString(b, kt)
		b = appendUint(b, "key_phase", phase)
		b = append(b, `,"trigger":`...)
		b = appendString(b, trigger)
		t.end(b)
	}
}

// KeyDiscarded logs quic:key_discarded for both directions of a level
// ("initial", "handshake").
func (t *Trace) KeyDiscarded(now time.Time, level string) {
	if t == nil {
		return
	}
	for _, side := range []string{"client_", "server_"} {
		b := t.begin(now, "key_discarded")
		b = append(b, `"key_type":`...)
		b = appendString(b, side+level+"_secret")
		b = append(b, `,"trigger":"tls"`...)
		t.end(b)
	}
}

func appendEndpoint(b []byte, key string, ap netip.AddrPort, cid []byte) []byte {
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":{`...)
	if ap.Addr().Is4() {
		b = append(b, `"ip_v4":"`...)
		b = ap.Addr().AppendTo(b)
		b = append(b, `","port_v4":`...)
	} else {
		b = append(b, `"ip_v6":"`...)
		b = ap.Addr().AppendTo(b)
		b = append(b, `","port_v6":`...)
	}
	b = strconv.AppendUint(b, uint64(ap.Port()), 10)
	if cid != nil {
		b = append(b, `,"connection_ids":["`...)
		b = hex.AppendEncode(b, cid)
		b = append(b, `"]`...)
	}
	return append(b, '}')
}

// ConnectionStarted logs quic:connection_started with both ends of the
// first path and the connection IDs of each side.
func (t *Trace) ConnectionStarted(now time.Time, local, remote netip.AddrPort, scid, dcid []byte) {
	if t == nil {
		return
	}
	b := t.begin(now, "connection_started")
	b = appendEndpoint(b, "local", local, scid)
	b = append(b, ',')
	b = appendEndpoint(b, "remote", remote, dcid)
	t.end(b)
}

// ConnectionClosed logs quic:connection_closed. owner is "local" or
// "remote"; trigger, if empty, is derived from the error.
func (t *Trace) ConnectionClosed(now time.Time, owner string, code uint64, isApp bool, reason, trigger string) {
	if t == nil {
		return
	}
	b := t.begin(now, "connection_closed")
	b = append(b, `"initiator":`...)
	b = appendString(b, owner)
	if isApp {
		b = append(b, `,"application_error":"unknown"`...)
	} else {
		b = append(b, `,"connection_error":`...)
		b = appendString(b, transportErrorName(code))
	}
	b = appendUint(b, "error_code", code)
	if reason != "" {
		b = append(b, `,"reason":`...)
		b = appendString(b, reason)
	}
	if trigger == "" {
		switch {
		case isApp:
			trigger = "application"
		case code == 0 && owner == "remote":
			trigger = "unspecified"
		default:
			trigger = "error"
		}
	}
	b = append(b, `,"trigger":`...)
	b = appendString(b, trigger)
	t.end(b)
}

// Param is one transport parameter of a parameters_set event.
type Param struct {
	Key    string
	Uint   uint64
	Bytes  []byte // logged as a hex string when Hex is set
	Hex    bool
	Bool   bool
	IsBool bool
}

// ParametersSet logs quic:parameters_set; initiator is "local" or
// "remote".
func (t *Trace) ParametersSet(now time.Time, initiator string, params []Param) {
	if t == nil {
		return
	}
	b := t.begin(now, "parameters_set")
	b = append(b, `"initiator":`...)
	b = appendString(b, initiator)
	for _, p := range params {
		switch {
		case p.Hex:
			b = append(b, ',', '"')
			b = append(b, p.Key...)
			b = append(b, `":"`...)
			b = hex.AppendEncode(b, p.Bytes)
			b = append(b, '"')
		case p.IsBool:
			b = append(b, ',', '"')
			b = append(b, p.Key...)
			b = append(b, `":`...)
			b = strconv.AppendBool(b, p.Bool)
		default:
			b = appendUint(b, p.Key, p.Uint)
		}
	}
	t.end(b)
}

var transportErrors = [...]string{
	"no_error", "internal_error", "connection_refused", "flow_control_error",
	"stream_limit_error", "stream_state_error", "final_size_error",
	"frame_encoding_error", "transport_parameter_error",
	"connection_id_limit_error", "protocol_violation", "invalid_token",
	"application_error", "crypto_buffer_exceeded", "key_update_error",
	"aead_limit_reached", "no_viable_path",
}

func transportErrorName(code uint64) string {
	if code < uint64(len(transportErrors)) {
		return transportErrors[code]
	}
	if code >= 0x100 && code < 0x200 {
		return "crypto_error_0x" + strconv.FormatUint(code, 16)
	}
	return "unknown"
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// PathStateUpdated logs quic:tuple_assigned for a multipath path: the
// tuple ID is the path ID; a closing path is logged without endpoints,
// which qlog reads as the tuple being abandoned. state ("validating",
// "active", "closing") and path_id are extension fields.
func (t *Trace) PathStateUpdated(now time.Time, pathID uint64, state string, local, remote netip.AddrPort) {
	t.tupleAssigned(now, pathID, state, "", local, remote)
}

// PathEvent logs a change of a path's health (event: "failed",
// "recovered", "spurious", "abandoned") as quic:tuple_assigned with the path's
// endpoints and the extension fields path_id, state (the path's state
// after the event: "failed", "active", ...) and path_event.
func (t *Trace) PathEvent(now time.Time, pathID uint64, state, event string, local, remote netip.AddrPort) {
	t.tupleAssigned(now, pathID, state, event, local, remote)
}

// tupleAssigned writes quic:tuple_assigned for a path; a closing path
// without endpoints, event (path_event) only if not empty.
func (t *Trace) tupleAssigned(now time.Time, pathID uint64, state, event string, local, remote netip.AddrPort) {
	if t == nil {
		return
	}
	b := t.begin(now, "tuple_assigned")
	b = append(b, `"tuple_id":"`...)
	b = strconv.AppendUint(b, pathID, 10)
	b = append(b, '"')
	if state != "closing" {
		b = append(b, ',')
		b = appendEndpoint(b, "tuple_local", local, nil)
		b = append(b, ',')
		b = appendEndpoint(b, "tuple_remote", remote, nil)
	}
	b = appendPathID(b, pathID)
	b = append(b, `,"state":`...)
	b = appendString(b, state)
	if event != "" {
		b = append(b, `,"path_event":`...)
		b = appendString(b, event)
	}
	t.end(b)
}
