package plots

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/mpq/mpq/resultset"
	"github.com/mpq/mpq/trafficgen"
)

// Message is one row of messages.csv. Times are in milliseconds since
// the experiment's time zero; Delivered and Replied are NaN when the
// event did not happen, MCT and Response +Inf (the values the
// distributions count).
type Message struct {
	Source    string
	Kind      string
	Seq       int
	Priority  bool
	Length    int64
	Reply     int64
	Created   float64
	Delivered float64
	Replied   float64
	MCT       float64
	Response  float64
	StreamID  uint64
	Status    string
	Failed    string
	// Warmup: created in the warm-up (output.warmup), left out of the
	// distributions (false in files without the column).
	Warmup bool
}

// Messages reads the run's messages.csv.
func (r *Run) Messages() ([]Message, error) {
	if r.messages != nil {
		return r.messages, nil
	}
	ms, err := readRunFile(r, "messages.csv", readMessages)
	if err != nil {
		return nil, err
	}
	if ms == nil {
		ms = []Message{}
	}
	rows := map[string]int{}
	for _, m := range ms {
		rows[m.Source]++
	}
	if err := resultset.CheckMessageRows(r.Dir, r.Summary, rows); err != nil {
		return nil, &InputError{err}
	}
	r.messages = ms
	return ms, nil
}

// messageColumns are the columns of messages.csv read.
var messageColumns = []string{"source", "kind", "seq", "priority", "length", "reply", "created_ms", "delivered_ms", "replied_ms", "mct_ms", "response_ms", "stream_id", "status", "failed"}

func readMessages(rd io.Reader) ([]Message, error) {
	return readCSV(rd, messageColumns, func(rec []string, col map[string]int, line int) (Message, error) {
		var perr error
		num := func(c string) float64 {
			v, err := trafficgen.ParseCSV(rec[col[c]])
			if err != nil && perr == nil {
				perr = fmt.Errorf("line %d: %s: %w", line, c, err)
			}
			return v
		}
		integer := func(c string) uint64 {
			v, err := strconv.ParseUint(rec[col[c]], 10, 64)
			if err != nil && perr == nil {
				perr = fmt.Errorf("line %d: %s: %w", line, c, err)
			}
			return v
		}
		m := Message{Source: rec[col["source"]], Kind: rec[col["kind"]], Seq: int(integer("seq")),
			Priority: rec[col["priority"]] == "true", Length: int64(integer("length")), Reply: int64(integer("reply")),
			Created: num("created_ms"), Delivered: num("delivered_ms"), Replied: num("replied_ms"),
			MCT: num("mct_ms"), Response: num("response_ms"),
			Status: rec[col["status"]], Failed: rec[col["failed"]]}
		if c, ok := col["warmup"]; ok {
			m.Warmup = rec[c] == "true"
		}
		if rec[col["stream_id"]] != "" {
			m.StreamID = integer("stream_id")
		}
		if perr != nil {
			return m, perr
		}
		// A time the distributions count is never missing: a message
		// that did not get there is +Inf.
		if math.IsNaN(m.MCT) {
			m.MCT = math.Inf(1)
		}
		if math.IsNaN(m.Response) {
			m.Response = math.Inf(1)
		}
		return m, nil
	})
}

// readRunFile reads the file name of the run's directory with read; a
// missing file or bad content is an InputError naming the file.
func readRunFile[T any](r *Run, name string, read func(io.Reader) ([]T, error)) ([]T, error) {
	name = filepath.Join(r.Dir, name)
	f, err := os.Open(name)
	if err != nil {
		return nil, &InputError{err}
	}
	defer f.Close()
	rows, err := read(f)
	if err != nil {
		return nil, inputErr("%s: %v", name, err)
	}
	return rows, nil
}

// readCSV reads a CSV file with a header naming at least the columns
// in need, and turns each record into a T with row (line is the record's
// line number in the file, for errors).
func readCSV[T any](rd io.Reader, need []string, row func(rec []string, col map[string]int, line int) (T, error)) ([]T, error) {
	cr := csv.NewReader(bufio.NewReader(rd))
	head, err := cr.Read()
	if err != nil {
		return nil, err
	}
	col := make(map[string]int, len(head))
	for i, h := range head {
		col[h] = i
	}
	for _, c := range need {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("no column %q", c)
		}
	}
	var out []T
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		v, err := row(rec, col, line)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
}
