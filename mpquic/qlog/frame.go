package qlog

import (
	"encoding/hex"
	"strconv"

	"github.com/mpq/mpq/mpquic/internal/wire"
)

// Frame is the qlog form of one frame, copied out of the wire frame so
// that it stays valid after the packet buffer is reused.
type Frame struct {
	// FrameType is the qlog frame_type ("stream", "ack", ...).
	FrameType string
	// Length is the frame's data length (raw.length for STREAM, CRYPTO
	// and DATAGRAM frames; raw.payload_length for PADDING).
	Length uint64
	fields []field
	ranges []wire.AckRange
}

type fieldKind uint8

const (
	kindUint fieldKind = iota
	kindBool
	kindString
	kindHex
)

type field struct {
	key  string
	kind fieldKind
	u    uint64
	s    string
	b    []byte
}

func (f *Frame) u(key string, v uint64) { f.fields = append(f.fields, field{key: key, u: v}) }
func (f *Frame) str(key, v string) {
	f.fields = append(f.fields, field{key: key, kind: kindString, s: v})
}
func (f *Frame) hex(key string, v []byte) {
	f.fields = append(f.fields, field{key: key, kind: kindHex, b: append([]byte(nil), v...)})
}
func (f *Frame) flag(key string, v bool) {
	var u uint64
	if v {
		u = 1
	}
	f.fields = append(f.fields, field{key: key, kind: kindBool, u: u})
}

func streamType(bidi bool) string {
	if bidi {
		return "bidirectional"
	}
	return "unidirectional"
}

// FrameFromWire converts a wire frame to its qlog form.
func FrameFromWire(wf wire.Frame) Frame {
	var f Frame
	switch w := wf.(type) {
	case *wire.PaddingFrame:
		f.FrameType, f.Length = "padding", uint64(w.Length)
	case *wire.PingFrame:
		f.FrameType = "ping"
	case *wire.AckFrame:
		f.FrameType = "ack"
		f.u("ack_delay_raw", w.AckDelay)
		f.ranges = append([]wire.AckRange(nil), w.Ranges...)
		if w.HasECN {
			f.u("ect0", w.ECT0)
			f.u("ect1", w.ECT1)
			f.u("ce", w.CE)
		}
	case *wire.ResetStreamFrame:
		f.FrameType = "reset_stream"
		f.u("stream_id", w.StreamID)
		f.str("error", "unknown")
		f.u("error_code", w.ErrorCode)
		f.u("final_size", w.FinalSize)
	case *wire.StopSendingFrame:
		f.FrameType = "stop_sending"
		f.u("stream_id", w.StreamID)
		f.str("error", "unknown")
		f.u("error_code", w.ErrorCode)
	case *wire.CryptoFrame:
		f.FrameType, f.Length = "crypto", uint64(len(w.Data))
		f.u("offset", w.Offset)
	case *wire.NewTokenFrame:
		f.FrameType = "new_token"
		f.hex("token_data", w.Token)
	case *wire.StreamFrame:
		f.FrameType, f.Length = "stream", uint64(len(w.Data))
		f.u("stream_id", w.StreamID)
		f.u("offset", w.Offset)
		if w.Fin {
			f.flag("fin", true)
		}
	case *wire.MaxDataFrame:
		f.FrameType = "max_data"
		f.u("maximum", w.Max)
	case *wire.MaxStreamDataFrame:
		f.FrameType = "max_stream_data"
		f.u("stream_id", w.StreamID)
		f.u("maximum", w.Max)
	case *wire.MaxStreamsFrame:
		f.FrameType = "max_streams"
		f.str("stream_type", streamType(w.Bidi))
		f.u("maximum", w.Max)
	case *wire.DataBlockedFrame:
		f.FrameType = "data_blocked"
		f.u("limit", w.Limit)
	case *wire.StreamDataBlockedFrame:
		f.FrameType = "stream_data_blocked"
		f.u("stream_id", w.StreamID)
		f.u("limit", w.Limit)
	case *wire.StreamsBlockedFrame:
		f.FrameType = "streams_blocked"
		f.str("stream_type", streamType(w.Bidi))
		f.u("limit", w.Limit)
	case *wire.NewConnectionIDFrame:
		f.FrameType = "new_connection_id"
		f.u("sequence_number", w.Seq)
		f.u("retire_prior_to", w.RetirePriorTo)
		f.hex("connection_id", w.ConnID)
		f.hex("stateless_reset_token", w.ResetToken[:])
	case *wire.RetireConnectionIDFrame:
		f.FrameType = "retire_connection_id"
		f.u("sequence_number", w.Seq)
	case *wire.PathChallengeFrame:
		f.FrameType = "path_challenge"
		f.hex("data", w.Data[:])
	case *wire.PathResponseFrame:
		f.FrameType = "path_response"
		f.hex("data", w.Data[:])
	case *wire.ConnectionCloseFrame:
		f.FrameType = "connection_close"
		if w.IsApplication {
			f.str("error_space", "application")
			f.str("error", "unknown")
		} else {
			f.str("error_space", "transport")
			f.str("error", transportErrorName(w.ErrorCode))
			f.u("trigger_frame_type", w.FrameType)
		}
		f.u("error_code", w.ErrorCode)
		f.str("reason", string(w.Reason))
	case *wire.HandshakeDoneFrame:
		f.FrameType = "handshake_done"
	case *wire.PathAckFrame:
		f.FrameType = "path_ack"
		f.u("path_id", w.PathID)
		f.u("ack_delay_raw", w.AckDelay)
		f.ranges = append([]wire.AckRange(nil), w.Ranges...)
	case *wire.PathAbandonFrame:
		f.FrameType = "path_abandon"
		f.u("path_id", w.PathID)
		f.u("error_code", w.ErrorCode)
	case *wire.PathStatusFrame:
		if w.Backup {
			f.FrameType = "path_status_backup"
		} else {
			f.FrameType = "path_status_available"
		}
		f.u("path_id", w.PathID)
		f.u("path_status_sequence_number", w.StatusSeq)
	case *wire.PathNewConnectionIDFrame:
		f.FrameType = "path_new_connection_id"
		f.u("path_id", w.PathID)
		f.u("sequence_number", w.Seq)
		f.u("retire_prior_to", w.RetirePriorTo)
		f.hex("connection_id", w.ConnID)
	case *wire.PathRetireConnectionIDFrame:
		f.FrameType = "path_retire_connection_id"
		f.u("path_id", w.PathID)
		f.u("sequence_number", w.Seq)
	case *wire.MaxPathIDFrame:
		f.FrameType = "max_path_id"
		f.u("maximum_path_id", w.MaxPathID)
	case *wire.PathsBlockedFrame:
		f.FrameType = "paths_blocked"
		f.u("maximum_path_id", w.MaxPathID)
	case *wire.PathCIDsBlockedFrame:
		f.FrameType = "path_cids_blocked"
		f.u("path_id", w.PathID)
		f.u("next_sequence_number", w.NextSeq)
	case *wire.RepairFrame:
		// The experimental REPAIR extension (not in the qlog drafts).
		f.FrameType, f.Length = "repair", uint64(len(w.Parity))
		if w.Q {
			f.FrameType = "repair_q"
		}
		f.u("stream_id", w.StreamID)
		f.u("offset", w.Offset)
		f.u("end", w.End)
		f.u("chunk_length", w.ChunkLen)
		f.u("column", w.Column)
		if w.Fin {
			f.flag("fin", true)
		}
	default:
		f.FrameType = "unknown"
		f.u("frame_type_bytes", wf.Type())
	}
	return f
}

func (f *Frame) appendJSON(b []byte) []byte {
	b = append(b, `{"frame_type":`...)
	b = appendString(b, f.FrameType)
	for _, fl := range f.fields {
		b = append(b, ',', '"')
		b = append(b, fl.key...)
		b = append(b, '"', ':')
		switch fl.kind {
		case kindUint:
			b = strconv.AppendUint(b, fl.u, 10)
		case kindBool:
			b = strconv.AppendBool(b, fl.u == 1)
		case kindString:
			b = appendString(b, fl.s)
		case kindHex:
			b = append(b, '"')
			b = hex.AppendEncode(b, fl.b)
			b = append(b, '"')
		}
	}
	if f.ranges != nil {
		b = append(b, `,"acked_ranges":[`...)
		// qlog lists ranges as [from, to]; smallest first reads best.
		for i := len(f.ranges) - 1; i >= 0; i-- {
			r := f.ranges[i]
			b = append(b, '[')
			b = strconv.AppendUint(b, r.Smallest, 10)
			if r.Largest != r.Smallest {
				b = append(b, ',')
				b = strconv.AppendUint(b, r.Largest, 10)
			}
			b = append(b, ']')
			if i > 0 {
				b = append(b, ',')
			}
		}
		b = append(b, ']')
	}
	switch {
	case f.FrameType == "padding":
		b = append(b, `,"raw":{"payload_length":`...)
		b = strconv.AppendUint(b, f.Length, 10)
		b = append(b, '}')
	case f.Length > 0 || f.FrameType == "stream" || f.FrameType == "crypto":
		b = append(b, `,"raw":{"length":`...)
		b = strconv.AppendUint(b, f.Length, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}
