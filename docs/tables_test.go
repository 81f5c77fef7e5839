package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every table of a results page says where its numbers come from, on the
// line before it:
//
//	<!-- table: NAME.md -->        the output of the page's Reproduce
//	                               line that writes -o NAME.md (mpq plot)
//	<!-- table made by: TEXT -->   what made a table no command writes
//	                               (a benchmark's output, a comparison
//	                               of the tables above, a paper's values)
//
// or lies between mpq paper's markers (`<!-- mpq paper: NAME -->`), which
// that command rewrites.
var (
	tableMarker   = regexp.MustCompile(`^<!-- table: (\S+\.md) -->$`)
	madeByMarker  = regexp.MustCompile(`^<!-- table made by: \S.* -->$`)
	paperBlock    = regexp.MustCompile(`^<!-- mpq paper: (end )?\S+ -->$`)
	writesTableMD = regexp.MustCompile(`\s-o\s+(\S+\.md)\b`)
)

// tablesPending are the results pages whose tables are not all marked
// yet (none now: a page may be listed while its tables are converted);
// tablesOwnedElsewhere those another issue rewrites.
var (
	tablesPending        = []string{}
	tablesOwnedElsewhere = []string{}
)

// A pageTable is a Markdown table of a page: its header cells, its
// first column, and the marker before it ("" for none).
type pageTable struct {
	line          int
	header, first []string
	marker        string
	inPaperBlock  bool
}

// pageTables returns the tables of a page that hold numbers: not a grid
// of figures, nor a table of a provenance block.
func pageTables(text string) []pageTable {
	lines := strings.Split(text, "\n")
	var out []pageTable
	inPaper, fence, provenance := false, false, false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "```"):
			fence = !fence
		case l == "<!-- provenance -->", l == "<!-- end provenance -->":
			provenance = l == "<!-- provenance -->"
		}
		if m := paperBlock.FindStringSubmatch(l); m != nil {
			inPaper = m[1] == ""
		}
		if fence || provenance || !strings.HasPrefix(l, "|") || i+1 >= len(lines) || !isSeparator(lines[i+1]) {
			continue
		}
		tb := pageTable{line: i + 1, header: cells(l), inPaperBlock: inPaper}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) != "" {
				tb.marker = strings.TrimSpace(lines[j])
				break
			}
		}
		j, figures := i+2, true
		for ; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
			tb.first = append(tb.first, cells(lines[j])[0])
			figures = figures && strings.Contains(lines[j], "| ![")
		}
		if !figures { // a grid of figures holds no numbers
			out = append(out, tb)
		}
		i = j - 1
	}
	return out
}

// isSeparator says whether a line is a table's header separator.
func isSeparator(l string) bool {
	l = strings.TrimSpace(l)
	return strings.HasPrefix(l, "|") && strings.Trim(l, "|-: ") == ""
}

// cells are a table row's cells, trimmed.
func cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	var out []string
	for _, c := range strings.Split(row, "|") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

// TestResultsTablesHaveSources: every table of a results page comes from
// a command of its Reproduce section (mpq plot -o NAME.md, mpq paper) or
// says what made it; a table's command must be one of the page's
// Reproduce lines.
func TestResultsTablesHaveSources(t *testing.T) {
	pages, err := filepath.Glob("results/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		base := filepath.Base(page)
		if base == "README.md" || slices.Contains(tablesOwnedElsewhere, base) {
			continue
		}
		if slices.Contains(tablesPending, base) {
			t.Logf("%s: tables not all marked yet", page)
			continue
		}
		written := map[string]bool{}
		for _, l := range reproduceLines(t, page) {
			for _, m := range writesTableMD.FindAllStringSubmatch(l, -1) {
				written[filepath.Base(m[1])] = true
			}
		}
		for _, tb := range pageTables(readDoc(t, page)) {
			switch m := tableMarker.FindStringSubmatch(tb.marker); {
			case tb.inPaperBlock, madeByMarker.MatchString(tb.marker):
			case m != nil:
				if !written[m[1]] {
					t.Errorf("%s:%d: the table's %s is written by no line of the page's Reproduce section", page, tb.line, m[1])
				}
			default:
				t.Errorf("%s:%d: a table without its source: put <!-- table: NAME.md --> (a Reproduce line writes -o NAME.md) or <!-- table made by: ... --> on the line before it", page, tb.line)
			}
		}
	}
}

// checkGeneratedTables compares each marked table of a page with the
// file its command wrote into dir when TestReproduceBoxes ran the page's
// Reproduce lines: the same header and the same rows by their first
// cell (the grid points). Tables whose command was not run (skipped,
// by -o file) are not compared.
func checkGeneratedTables(t *testing.T, page, dir string, skipped map[string]bool) (compared int) {
	t.Helper()
	out := map[string]string{} // NAME.md -> the path a line writes it to
	for _, l := range reproduceLines(t, page) {
		for _, m := range writesTableMD.FindAllStringSubmatch(l, -1) {
			out[filepath.Base(m[1])] = m[1]
		}
	}
	for _, tb := range pageTables(readDoc(t, page)) {
		m := tableMarker.FindStringSubmatch(tb.marker)
		if m == nil || skipped[out[m[1]]] {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, out[m[1]]))
		if err != nil {
			t.Errorf("%s:%d: %v", page, tb.line, err)
			continue
		}
		gen := pageTables(string(b))
		if len(gen) != 1 {
			t.Errorf("%s:%d: %s holds %d tables, want 1", page, tb.line, m[1], len(gen))
			continue
		}
		if !slices.Equal(gen[0].header, tb.header) {
			t.Errorf("%s:%d: the page's header\n  %q\nis not the header %s's command writes:\n  %q", page, tb.line, tb.header, m[1], gen[0].header)
		}
		if !slices.Equal(gen[0].first, tb.first) {
			t.Errorf("%s:%d: the page's rows\n  %q\nare not those %s's command writes:\n  %q", page, tb.line, tb.first, m[1], gen[0].first)
		}
		compared++
	}
	return compared
}

// TestPageTables: the table reader finds a table's header, rows and
// marker, and skips code blocks.
func TestPageTables(t *testing.T) {
	text := "<!-- table: a.md -->\n| x | y |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\n```\n| not | a table |\n| --- | --- |\n```\n" +
		"| | figure | grid |\n| --- | --- | --- |\n| IAT 50 ms | ![a](a.png) | ![b](b.png) |\n\n<!-- provenance -->\n| build | commit |\n| --- | --- |\n| 1 | `abc` |\n<!-- end provenance -->\n" +
		"<!-- mpq paper: t -->\n| p |\n| --- |\n| 5 |\n<!-- mpq paper: end t -->\n"
	got := pageTables(text)
	if len(got) != 2 {
		t.Fatalf("%d tables, want 2: %+v", len(got), got)
	}
	if !slices.Equal(got[0].header, []string{"x", "y"}) || !slices.Equal(got[0].first, []string{"1", "3"}) || got[0].marker != "<!-- table: a.md -->" {
		t.Errorf("first table: %+v", got[0])
	}
	if !got[1].inPaperBlock || got[0].inPaperBlock {
		t.Errorf("mpq paper's block: %+v", got)
	}
}
