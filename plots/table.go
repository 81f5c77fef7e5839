package plots

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Table is the numbers behind a figure, as a Markdown table for a
// document and as CSV for a program (with separate columns where the
// Markdown puts several numbers in one cell).
type Table struct {
	// MD and CSV are the rows, the header first.
	MD, CSV [][]string
}

// TableFormats are the file formats of a table, by extension.
var TableFormats = []string{"md", "csv"}

// Write writes the table in format ("md" or "csv").
func (t *Table) Write(w io.Writer, format string) error {
	switch format {
	case "md":
		return t.markdown(w)
	case "csv":
		cw := csv.NewWriter(w)
		if err := cw.WriteAll(t.CSV); err != nil {
			return err
		}
		return cw.Error()
	}
	return fmt.Errorf("unknown table format %q (want %s)", format, strings.Join(TableFormats, ", "))
}

// Save writes the table to the file name in the format of its extension.
func (t *Table) Save(name string) error {
	format := FormatOf(name)
	return WriteFile(name, func(w io.Writer) error { return t.Write(w, format) })
}

func (t *Table) markdown(w io.Writer) error {
	var b strings.Builder
	for i, row := range t.MD {
		b.WriteString("|")
		for _, c := range row {
			b.WriteString(" " + strings.ReplaceAll(c, "|", `\|`) + " |")
		}
		b.WriteString("\n")
		if i == 0 {
			b.WriteString("|" + strings.Repeat("---|", len(row)) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// FormatNumber formats a number for a Markdown cell with prec decimals: "+Inf",
// "–" for a value that does not exist.
func FormatNumber(v float64, prec int) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case math.IsInf(v, 1):
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}
