package core

import "errors"

var (
	errNoRecv = errors.New("mpquic: stream has no receiving direction")
	errNoSend = errors.New("mpquic: stream has no sending direction")
)

// EventKind says what changed.
type EventKind uint8

// Events reported by PollEvent.
const (
	// EventHandshakeDone: the TLS handshake completed.
	EventHandshakeDone EventKind = iota + 1
	// EventStreamIncoming: the peer opened StreamID; AcceptStream returns it.
	EventStreamIncoming
	// EventStreamReadable: StreamID has data, its end, or a reset to read.
	EventStreamReadable
	// EventStreamWritable: StreamID accepts more data, or failed.
	EventStreamWritable
	// EventStreamsAvailable: the peer raised its stream limit.
	EventStreamsAvailable
	// EventClosed: the connection ended; Err says why.
	EventClosed
	// EventPathValidated: path PathID passed validation and carries data.
	EventPathValidated
	// EventPathFailed: the validation of path PathID failed; the path is
	// abandoned.
	EventPathFailed
	// EventPathClosed: path PathID was abandoned by either end.
	EventPathClosed
	// EventPathNew: the peer opened path PathID (server side); it is
	// validated before it carries data.
	EventPathNew
	// EventPathsAvailable: the peer raised its path limit or gave
	// connection IDs for a new path: AddPath may succeed now.
	EventPathsAvailable
	// EventPathBroken: path PathID stopped delivering while another path
	// works; it carries no data until EventPathRecovered (see PathEvent).
	EventPathBroken
	// EventPathRecovered: the broken path PathID answered its probes.
	EventPathRecovered
	// EventEarlyData: the server accepted the client's 0-RTT (Allow0RTT):
	// streams may arrive, and be answered, before EventHandshakeDone.
	EventEarlyData
)

// Event is a change the application may be waiting for.
type Event struct {
	Kind     EventKind
	StreamID uint64
	PathID   uint64
	Err      error
}

func (c *Conn) emit(e Event) { c.events = append(c.events, e) }

// PollEvent returns the next event, if any.
func (c *Conn) PollEvent() (Event, bool) {
	if c.eventHead >= len(c.events) {
		c.events, c.eventHead = c.events[:0], 0
		return Event{}, false
	}
	e := c.events[c.eventHead]
	c.eventHead++
	return e, true
}
