// Package resultset reads the directories mpq run writes and aggregates the
// repetitions of a sweep: runs.csv (one row per run with its varied keys
// and headline metrics), aggregate.csv and aggregate.json (one entry per
// grid point: mean, standard deviation and 95 % Student-t confidence
// interval of every headline metric across the repetitions, and message
// times pooled over all repetitions). docs/reference/results.md documents
// the formats. Package resultset/agreement, beneath it, says how closely the
// results of two emulators of one experiment must agree.
//
// A run is a directory with summary.json (written last, under a
// temporary name, so its presence means the run is complete); runs are
// found anywhere below the directory aggregated, so the directories of a
// sweep split across machines can be copied together in any layout.
package resultset

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/trafficgen"
)

// Files the aggregation writes at the top of a sweep's directory.
const (
	RunsCSV       = "runs.csv"
	AggregateCSV  = "aggregate.csv"
	AggregateJSON = "aggregate.json"
)

// Run is one run directory.
type Run struct {
	// Dir is the run's directory, relative to the aggregated directory
	// (slash-separated).
	Dir     string
	Summary *trafficgen.Summary
	abs     string
}

// ReadRun reads the summary of the run in dir.
func ReadRun(dir string) (*trafficgen.Summary, error) {
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, err
	}
	var s trafficgen.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	return &s, nil
}

// FindRuns returns the run directories below root (those with a
// summary.json), relative to root, sorted; it skips temporary
// directories of runs under way (".NAME.tmp-…").
func FindRuns(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && d.Name() == "summary.json" {
			rel, err := filepath.Rel(root, filepath.Dir(p))
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs, err
}

// SourceTimes are one source's rows of a run's messages.csv.
type SourceTimes struct {
	// Times holds the column read of the rows after the warm-up (in
	// milliseconds, +Inf for messages that did not complete); Warmup
	// counts the rows of the warm-up (column warmup = true), which
	// Times leaves out.
	Times  []float64
	Warmup int
}

// ReadMessageTimes reads one column of a run's messages.csv by source.
// Files written before the warmup column existed have no warm-up rows.
func ReadMessageTimes(dir, column string) (map[string]*SourceTimes, error) {
	f, err := os.Open(filepath.Join(dir, "messages.csv"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(bufio.NewReader(f))
	head, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	src, col, warm := -1, -1, -1
	for i, h := range head {
		switch h {
		case "source":
			src = i
		case column:
			col = i
		case "warmup":
			warm = i
		}
	}
	if src < 0 || col < 0 {
		return nil, fmt.Errorf("%s: no %q or \"source\" column", f.Name(), column)
	}
	out := map[string]*SourceTimes{}
	for {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name(), err)
		}
		st := out[rec[src]]
		if st == nil {
			st = &SourceTimes{}
			out[rec[src]] = st
		}
		if warm >= 0 && rec[warm] == "true" {
			st.Warmup++
			continue
		}
		v, err := strconv.ParseFloat(rec[col], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s %q: %w", f.Name(), column, rec[col], err)
		}
		st.Times = append(st.Times, v)
	}
}

// CheckMessageRows compares the rows of a run's messages.csv per source
// (rows) with what its summary.json counts: every source but bulk has
// messages + warmup_excluded rows. A file cut short, even on a line
// boundary, has fewer: the error says so.
func CheckMessageRows(dir string, s *trafficgen.Summary, rows map[string]int) error {
	for _, src := range s.Sources {
		if src.Kind == experiment.KindBulk {
			continue
		}
		if want := src.Messages + src.WarmupExcluded; rows[src.Name] != want {
			return fmt.Errorf("%s: %d rows of source %s, summary.json counts %d messages (the file is cut short or not this run's)",
				filepath.Join(dir, "messages.csv"), rows[src.Name], src.Name, want)
		}
	}
	return nil
}

// formatFloat writes a finite number with up to six decimals, without
// trailing zeros.
func formatFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', 6, 64)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	if s == "-0" {
		s = "0"
	}
	return s
}
