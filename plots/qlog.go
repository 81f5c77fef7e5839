package plots

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// Classes of the packets of a timeline.
const (
	classBulk = iota
	classPriority
	classCopy
	classRetx
	numClasses
)

var classNames = [numClasses]string{"bulk", "prio", "copy", "retx"}

// packetMark is one packet carrying stream data, sent at time T (ms) on
// a path, of a class, and whether it was declared lost.
type packetMark struct {
	T        float64
	Path     uint64
	Class    int
	Priority bool
	Lost     bool
}

// qlogEvent is what the timeline reads of a qlog event.
type qlogEvent struct {
	Time float64 `json:"time"`
	Name string  `json:"name"`
	Data struct {
		Header struct {
			PacketType   string `json:"packet_type"`
			PacketNumber uint64 `json:"packet_number"`
		} `json:"header"`
		PathID uint64 `json:"path_id"`
		Frames []struct {
			FrameType string `json:"frame_type"`
			StreamID  uint64 `json:"stream_id"`
			Offset    uint64 `json:"offset"`
			Raw       struct {
				Length uint64 `json:"length"`
			} `json:"raw"`
		} `json:"frames"`
		DuplicateOf *struct{} `json:"duplicate_of"`
	} `json:"data"`
}

// qlogHeader is what the timeline reads of a trace's header.
type qlogHeader struct {
	Trace struct {
		VantagePoint struct {
			Type string `json:"type"`
		} `json:"vantage_point"`
	} `json:"trace"`
}

// traceOf finds the qlog trace of one connection end in a run (the runs
// of mpq run have one connection); need says, in the error for a run
// without one, what the trace was for.
func traceOf(r *Run, vantage, need string) (string, error) {
	names, _ := filepath.Glob(filepath.Join(r.Dir, "qlog", "*.sqlog"))
	sort.Strings(names)
	var found []string
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return "", &InputError{err}
		}
		line, err := bufio.NewReader(f).ReadBytes('\n')
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return "", &InputError{err}
		}
		var h qlogHeader
		if json.Unmarshal(bytes.TrimLeft(line, "\x1e"), &h) == nil && h.Trace.VantagePoint.Type == vantage {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return "", inputErr("%s: no qlog trace of the %s (%s: run with --set output.qlog=true)", r.Dir, vantage, need)
	case 1:
		return found[0], nil
	}
	return "", inputErr("%s: %d qlog traces of the %s; one connection's is needed", r.Dir, len(found), vantage)
}

// readPackets reads the packets carrying stream data a trace records as
// sent in [from, to] ms, classed: a copy when the packet is a copy of
// another (duplicate_of); a retransmission when it re-sends stream data
// sent before (an offset below the highest sent on its stream); else
// priority when it carries data of a stream in prio, else bulk. Packets
// the trace declares lost are marked so.
func readPackets(name string, prio map[uint64]bool, from, to float64) ([]packetMark, error) {
	type key struct {
		typ  string
		path uint64
		pn   uint64
	}
	frontier := map[uint64]uint64{}
	index := map[key]int{}
	var marks []packetMark
	err := scanTrace(name, []string{"quic:packet_sent", "quic:packet_lost"}, func(b []byte) error {
		var ev qlogEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			return err
		}
		k := key{ev.Data.Header.PacketType, ev.Data.PathID, ev.Data.Header.PacketNumber}
		if ev.Name == "quic:packet_lost" {
			if i, ok := index[k]; ok {
				marks[i].Lost = true
			}
		} else if m, ok := classify(&ev, prio, frontier); ok && ev.Time >= from && ev.Time <= to {
			index[k] = len(marks)
			marks = append(marks, m)
		}
		return nil
	})
	return marks, err
}

// scanTrace calls fn with each record of the trace name (without its
// record separator) that mentions one of the event names, in order; an
// error of fn is the trace's, at that line.
func scanTrace(name string, events []string, fn func(record []byte) error) error {
	f, err := os.Open(name)
	if err != nil {
		return &InputError{err}
	}
	defer f.Close()
	quoted := make([][]byte, len(events))
	for i, e := range events {
		quoted[i] = []byte(`"` + e + `"`)
	}
	rd := bufio.NewReaderSize(f, 1<<20)
	for line := 1; ; line++ {
		b, err := rd.ReadBytes('\n')
		if len(b) > 0 && slices.ContainsFunc(quoted, func(q []byte) bool { return bytes.Contains(b, q) }) {
			if err := fn(bytes.TrimLeft(b, "\x1e")); err != nil {
				return inputErr("%s:%d: %v", name, line, err)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

// classify classes a sent packet and moves the streams' frontiers; ok is
// false for a packet without stream data.
func classify(ev *qlogEvent, prio map[uint64]bool, frontier map[uint64]uint64) (packetMark, bool) {
	m := packetMark{T: ev.Time, Path: ev.Data.PathID, Class: -1}
	resend, priority := false, false
	for _, fr := range ev.Data.Frames {
		if fr.FrameType != "stream" {
			continue
		}
		if m.Class < 0 {
			m.Class = classBulk
		}
		if fr.Offset < frontier[fr.StreamID] {
			resend = true
		}
		frontier[fr.StreamID] = max(frontier[fr.StreamID], fr.Offset+fr.Raw.Length)
		priority = priority || prio[fr.StreamID]
	}
	switch {
	case m.Class < 0:
		return m, false
	case ev.Data.DuplicateOf != nil:
		m.Class = classCopy
	case resend:
		m.Class = classRetx
	case priority:
		m.Class = classPriority
	}
	m.Priority = priority
	return m, true
}
