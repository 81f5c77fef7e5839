// Package docs holds the tests of the repository's Markdown: links and
// anchors resolve, the reference does not drift from the code, and the
// pages under docs/ say what is true now (no lab notebook).
package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top, seen from this package.
const root = ".."

// pending are link targets written on other branches: a link to one is
// accepted while the file does not exist yet (remove an entry once its
// file is merged).
var pending = map[string]bool{}

// markdownFiles lists the repository's Markdown files, relative to root,
// leaving out hidden directories, build directories and the results
// mpq run writes at the top.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && p != root && (strings.HasPrefix(name, ".") || name == "target" || name == "node_modules" || p == filepath.Join(root, "results")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %d Markdown files", len(files))
	}
	return files
}

// A mdLine is a line of a Markdown file outside fenced code blocks.
type mdLine struct {
	n    int
	text string
}

// proseLines returns the lines of a Markdown file outside fenced code
// blocks.
func proseLines(t *testing.T, name string) []mdLine {
	t.Helper()
	f, err := os.Open(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []mdLine
	fence := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		s := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~")):
			fence = s[:3]
		case fence != "" && strings.HasPrefix(s, fence):
			fence = ""
		case fence == "":
			out = append(out, mdLine{n, l})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	heading    = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	emphasis   = regexp.MustCompile(`(\*\*|__|\*)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
)

// slug is GitHub's anchor of a heading's text: the text as rendered
// (code spans keep their content, links their text, emphasis markers
// go), lower case, every character but letters, digits, marks, spaces,
// hyphens and underscores removed, spaces turned into hyphens.
func slug(text string) string {
	text = inlineLink.ReplaceAllString(text, "$1")
	text = strings.ReplaceAll(text, "`", "")
	text = htmlTag.ReplaceAllString(text, "")
	text = emphasis.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r), r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown file: its headings' slugs
// (a repeated slug gets -1, -2, … as on GitHub) and explicit HTML anchors.
func anchors(t *testing.T, name string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(t, name) {
		if m := heading.FindStringSubmatch(l.text); m != nil {
			s := slug(m[2])
			if k := seen[s]; k > 0 {
				out[fmt.Sprintf("%s-%d", s, k)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(l.text, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// A link is a relative link or anchor of a Markdown file.
type link struct {
	file   string // the file it is in
	line   int
	target string // the path, relative to the repository's root ("" for the file itself)
	anchor string
	raw    string
}

// links returns the relative links of a Markdown file (code spans and
// fenced blocks left out; external links and mail addresses skipped). A
// link's text may run over several lines.
func links(t *testing.T, name string) []link {
	t.Helper()
	lines := proseLines(t, name)
	n := 0
	if len(lines) > 0 {
		n = lines[len(lines)-1].n
	}
	text := make([]string, n) // fenced lines stay empty
	for _, l := range lines {
		text[l.n-1] = codeSpan.ReplaceAllStringFunc(l.text, func(s string) string { return strings.Repeat(" ", len(s)) })
	}
	all := strings.Join(text, "\n")
	var out []link
	for _, m := range inlineLink.FindAllStringSubmatchIndex(all, -1) {
		raw := all[m[4]:m[5]]
		if raw == "" || strings.Contains(raw, "://") || strings.HasPrefix(raw, "mailto:") {
			continue
		}
		p, anchor, _ := strings.Cut(raw, "#")
		target := ""
		if p != "" {
			target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(name), p)))
		}
		line := 1 + strings.Count(all[:m[0]], "\n")
		out = append(out, link{file: name, line: line, target: target, anchor: anchor, raw: raw})
	}
	return out
}

// TestLinks: every relative link of every Markdown file in the
// repository resolves to a file or directory of the repository, and
// every #anchor to a heading (or HTML anchor) of its target.
func TestLinks(t *testing.T) {
	cache := map[string]map[string]bool{}
	checked := 0
	for _, f := range markdownFiles(t) {
		for _, l := range links(t, f) {
			checked++
			target := l.target
			if target == "" {
				target = l.file
			}
			if strings.HasPrefix(target, "../") {
				t.Errorf("%s:%d: link %q leaves the repository", l.file, l.line, l.raw)
				continue
			}
			st, err := os.Stat(filepath.Join(root, target))
			if err != nil {
				if !pending[target] {
					t.Errorf("%s:%d: link %q: no %s", l.file, l.line, l.raw, target)
				}
				continue
			}
			if l.anchor == "" {
				continue
			}
			if st.IsDir() || !strings.HasSuffix(target, ".md") {
				t.Errorf("%s:%d: link %q: an anchor into %s, which is no Markdown file", l.file, l.line, l.raw, target)
				continue
			}
			if cache[target] == nil {
				cache[target] = anchors(t, target)
			}
			if !cache[target][l.anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with the anchor #%s", l.file, l.line, l.raw, target, l.anchor)
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d links checked", checked)
	}
}

// TestSlug: GitHub's anchors of some headings of these pages.
func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"The two commands", "the-two-commands"},
		{"`[[path]]` (one or more)", "path-one-or-more"},
		{"`[transport]`", "transport"},
		{"Figure 4: one priority source", "figure-4-one-priority-source"},
		{"CoNEXT'17 grid", "conext17-grid"},
		{"`cwr-plus` with parity instead of copies", "cwr-plus-with-parity-instead-of-copies"},
		{"R3 over TLS/TCP and TCP (namespace backend)", "r3-over-tlstcp-and-tcp-namespace-backend"},
		{"Reference 000: a cloud control loop (`000-control-loop.toml`)", "reference-000-a-cloud-control-loop-000-control-looptoml"},
		{"0-RTT and session resumption", "0-rtt-and-session-resumption"},
		{"Link traces: `trace_up`, `trace_down`", "link-traces-trace_up-trace_down"},
		{"**Bold** and [a link](x.md)", "bold-and-a-link"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// The lab notebook's marks: a commit hash (7 to 40 hex digits with a
// letter and a digit among them) or a time of day (hh:mm, not in a
// ratio such as 1:2 nor a duration such as 1:02:03).
var (
	commitHash = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)
	timeOfDay  = regexp.MustCompile(`(^|[^0-9:])([01]?[0-9]|2[0-3]):[0-5][0-9]($|[^0-9:])`)
)

// isHash says whether a word looks like a commit hash rather than a
// number or a word.
func isHash(w string) bool {
	return strings.ContainsAny(w, "0123456789") && strings.ContainsAny(w, "abcdef")
}

// TestNoNotebookInDocs: no page under docs/ carries a commit hash or a
// time of day outside a provenance block (between "<!-- provenance -->"
// and "<!-- end provenance -->", or mpq paper's runs block): the
// documentation says what is true now; the history is in NOTES.md and
// the commit messages.
func TestNoNotebookInDocs(t *testing.T) {
	for _, f := range markdownFiles(t) {
		if !strings.HasPrefix(f, "docs/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		inProvenance := false
		for i, l := range strings.Split(string(b), "\n") {
			switch strings.TrimSpace(l) {
			case "<!-- provenance -->", "<!-- mpq paper: runs -->":
				inProvenance = true
				continue
			case "<!-- end provenance -->", "<!-- mpq paper: end runs -->":
				inProvenance = false
				continue
			}
			if inProvenance {
				continue
			}
			s := stripLinks(l)
			for _, w := range commitHash.FindAllString(s, -1) {
				if isHash(w) {
					t.Errorf("%s:%d: a commit hash (%s) outside a provenance block", f, i+1, w)
				}
			}
			if m := timeOfDay.FindStringSubmatch(s); m != nil {
				t.Errorf("%s:%d: a time of day (%s:…) outside a provenance block", f, i+1, m[2])
			}
		}
	}
}

// stripLinks removes link targets (file names may hold hex) from a line.
func stripLinks(l string) string {
	return inlineLink.ReplaceAllString(l, "[$1]")
}

// codeWord splits a code span into the names it shows: `[[path.change]]`
// shows path and change, `"sim"` shows sim.
var codeWord = regexp.MustCompile(`[A-Za-z0-9_+-]+`)

// missing returns the names of want that text does not show as a code
// span of their own (`name` or `"name"`), or, with words, as a whole
// word of a code span (`[[path.change]]` shows change).
func missing(text string, want []string, words bool) []string {
	shown := map[string]bool{}
	for _, span := range codeSpan.FindAllString(text, -1) {
		inner := strings.Trim(strings.Trim(span, "`"), `" `)
		shown[inner] = true
		if words {
			for _, w := range codeWord.FindAllString(span, -1) {
				shown[w] = true
			}
		}
	}
	var out []string
	for _, w := range want {
		if !shown[w] {
			out = append(out, w)
		}
	}
	slices.Sort(out)
	return out
}

// TestNoSharedPaths: nothing in the repository points into ../shared, a
// directory a clone does not have; papers are cited by title
// (docs/references.md).
func TestNoSharedPaths(t *testing.T) {
	needle := []byte("../" + "shared/")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "target" || p == filepath.Join(root, "results")) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(p) {
		case ".go", ".md", ".toml", ".txt", ".sh", ".py", ".cff", ".ns", ".json":
		default:
			if filepath.Base(p) != "run" {
				return nil
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if i := bytes.Index(b, needle); i >= 0 {
			t.Errorf("%s:%d: a path into ../shared", p, 1+bytes.Count(b[:i], []byte("\n")))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
