package experiment

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// TracePacket is the bytes one delivery opportunity of a trace carries,
// as in mahimahi: a packet of up to this size may leave at each of the
// trace's times.
const TracePacket = 1500

// MaxTraceLines bounds the lines of a trace file.
const MaxTraceLines = 10_000_000

// Trace is a link trace in mahimahi's format: each line the time in
// milliseconds at which one packet of up to TracePacket bytes may leave
// the link (a delivery opportunity; several lines may share a time), in
// order; the trace repeats with a period of its last time.
type Trace struct {
	// File is where it was read from (absolute).
	File string `json:"file"`
	// MS are the opportunities' times in milliseconds, non-decreasing,
	// the last one positive (the period).
	MS []int64 `json:"ms"`
}

// Period is the time after which the trace repeats.
func (t *Trace) Period() time.Duration { return time.Duration(t.MS[len(t.MS)-1]) * time.Millisecond }

// MeanRate is the trace's capacity in bits per second: its opportunities'
// bytes over its period.
func (t *Trace) MeanRate() float64 {
	return float64(len(t.MS)) * TracePacket * 8 / t.Period().Seconds()
}

// ParseTrace reads a trace in mahimahi's format. Blank lines are
// skipped; anything else that is not a whole number of milliseconds, a
// time before the one above it, or a trace whose last time is not
// positive is an error naming its line.
func ParseTrace(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 4096)
	t := &Trace{}
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if len(t.MS) >= MaxTraceLines {
			return nil, fmt.Errorf("line %d: more than %d opportunities", line, MaxTraceLines)
		}
		v, err := strconv.ParseInt(s, 10, 64)
		switch {
		case err != nil:
			return nil, fmt.Errorf("line %d: %q is not a whole number of milliseconds", line, s)
		case v < 0 || v > int64(365*24*time.Hour/time.Millisecond):
			return nil, fmt.Errorf("line %d: %d ms is outside [0, one year]", line, v)
		case len(t.MS) > 0 && v < t.MS[len(t.MS)-1]:
			return nil, fmt.Errorf("line %d: %d ms is before the line above (%d ms)", line, v, t.MS[len(t.MS)-1])
		}
		t.MS = append(t.MS, v)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: too long", line+1)
		}
		return nil, err
	}
	if len(t.MS) == 0 {
		return nil, errors.New("no opportunities")
	}
	if t.MS[len(t.MS)-1] <= 0 {
		return nil, errors.New("the last time, the period the trace repeats with, is not positive")
	}
	return t, nil
}

// LoadTrace reads a trace file; a relative name is relative to the
// directory of the experiment file.
func LoadTrace(expFile, name string) (*Trace, error) {
	if !filepath.IsAbs(name) {
		name = filepath.Join(filepath.Dir(expFile), name)
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := ParseTrace(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", abs, err)
	}
	t.File = abs
	return t, nil
}

// loadTrace reads the trace files of experiment files (a variable: the
// loader's fuzz target reads none).
var loadTrace = LoadTrace

// readTraces reads a path's trace_up and trace_down keys into its links
// (after their [path.up] and [path.down] tables, up and down, which may
// be nil): a trace replaces the direction's rate, and a rate in the
// direction's own table is refused.
func readTraces(t *table, p *Path, up, down *table) {
	for _, d := range []struct {
		key  string
		link *Link
		sub  *table
	}{{"trace_up", &p.Up, up}, {"trace_down", &p.Down, down}} {
		if _, ok := t.m[d.key]; !ok {
			continue
		}
		name := t.str(d.key, "")
		if t.failed[d.key] {
			continue
		}
		if name == "" {
			t.fail(d.key, "want the name of a trace file (mahimahi format)")
			continue
		}
		if d.sub != nil {
			if _, ok := d.sub.m["rate"]; ok {
				d.sub.fail("rate", "the direction's %s gives its rate", d.key)
			}
		}
		tr, err := loadTrace(t.d.file, name)
		if err != nil {
			t.fail(d.key, "%v", err)
			continue
		}
		d.link.Trace = tr
		d.link.Rate = tr.MeanRate()
	}
}

// writeTraces writes a path's trace keys (absolute file names, so that
// the resolved file reads them wherever it is).
func writeTraces(w func(key, v string), p Path) {
	if p.Up.Trace != nil {
		w("trace_up", strconv.Quote(p.Up.Trace.File))
	}
	if p.Down.Trace != nil {
		w("trace_down", strconv.Quote(p.Down.Trace.File))
	}
}
