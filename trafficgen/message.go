// Package trafficgen is the traffic generator of mpq experiments, after
// section III-A/B of the reference paper: periodic sources of priority
// messages beside bulk background data, each message on a stream of its
// own that is reused only after the receiver acknowledged the whole
// message, and the workloads of the other reference papers
// (request-response, file transfers, 30 Hz frames, stop-and-wait
// publishing). It is written once against package appenv and runs
// unchanged in the simulator and on real sockets.
//
// Every message starts with a Header (source, sequence number, length,
// reply length, creation time). The receiver reads the whole message, then
// writes the reply on the same stream (one byte for the paper's periodic
// messages) with the priority the header asks for; the sender counts the
// stream free again once the whole reply arrived. A Recorder keeps every message's times, the bytes sent per path
// and class, and each path's congestion state, and summarises them.
package trafficgen

import (
	"encoding/binary"
	"errors"
	"time"
)

// HeaderLen is the size of the header that starts every message.
const HeaderLen = 32

// magic marks a trafficgen message header.
const magic = 0x4d51 // "MQ"

// Header flags.
const (
	// FlagBulk marks an unbounded background stream: the receiver discards
	// everything that follows and never replies.
	FlagBulk = 1 << iota
	// FlagPriority marks a message sent on a priority stream; the
	// receiver counts its bytes as priority data.
	FlagPriority
	// FlagReplyPriority asks the receiver to send the reply on a priority
	// stream (the reply_priority of the source, by default its priority).
	FlagReplyPriority
)

// Header starts every message.
type Header struct {
	Source uint16 // index of the source in the experiment
	Flags  uint8
	Seq    uint32
	// Length is the message's length in bytes, header included (0 with
	// FlagBulk: unbounded).
	Length uint64
	// Reply is the number of bytes the receiver writes back once it has
	// the whole message (at least 1).
	Reply uint32
	// Created is when the sender generated the message.
	Created time.Time
}

// errBadHeader reports a stream that does not start with a header.
var errBadHeader = errors.New("trafficgen: bad message header")

// Append encodes the header.
func (h *Header) Append(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, magic)
	b = binary.BigEndian.AppendUint16(b, h.Source)
	b = append(b, h.Flags, 0, 0, 0)
	b = binary.BigEndian.AppendUint32(b, h.Seq)
	b = binary.BigEndian.AppendUint64(b, h.Length)
	b = binary.BigEndian.AppendUint32(b, h.Reply)
	b = binary.BigEndian.AppendUint64(b, uint64(h.Created.UnixNano()))
	return b
}

// ParseHeader decodes a header from the first HeaderLen bytes of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen || binary.BigEndian.Uint16(b) != magic {
		return Header{}, errBadHeader
	}
	h := Header{
		Source:  binary.BigEndian.Uint16(b[2:]),
		Flags:   b[4],
		Seq:     binary.BigEndian.Uint32(b[8:]),
		Length:  binary.BigEndian.Uint64(b[12:]),
		Reply:   binary.BigEndian.Uint32(b[20:]),
		Created: time.Unix(0, int64(binary.BigEndian.Uint64(b[24:]))),
	}
	if h.Flags&FlagBulk == 0 && (h.Length < HeaderLen || h.Reply == 0) {
		return Header{}, errBadHeader
	}
	return h, nil
}
