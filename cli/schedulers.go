package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/mpq/mpq/scheduler"
)

// writeSchedulers writes the reference of every registered path and
// stream scheduler: its summary, and each option of a path scheduler with
// its values, default and Doc (scheduler.Option, the one place an option
// is documented). As Markdown (docs/reference/schedulers.md is this) or as
// plain text for the terminal (mpq help schedulers).
func writeSchedulers(w io.Writer, markdown bool) {
	head := func(level int, s string) {
		if markdown {
			fmt.Fprintf(w, "%s %s\n\n", strings.Repeat("#", level), s)
		} else {
			fmt.Fprintf(w, "%s\n\n", s)
		}
	}
	para := func(indent, s string) {
		if markdown {
			fmt.Fprintf(w, "%s\n\n", s)
			return
		}
		fmt.Fprintf(w, "%s\n", wrap(s, indent, 76))
	}
	if markdown {
		head(1, "Schedulers")
		para("", "Generated from the schedulers' registrations by `go test ./cli -run TestSchedulerReference -update`: every summary and option text here is the code's own (`scheduler.Option.Doc`); `mpq help schedulers` prints the same. An experiment file chooses the schedulers with `transport.path_scheduler` and `transport.stream_scheduler`, and sets options with `[transport.scheduler_options]`.")
	}
	head(2, "Path schedulers (transport.path_scheduler)")
	for _, name := range scheduler.PathSchedulers() {
		def := ""
		if name == scheduler.DefaultPath {
			def = " (default)"
		}
		if markdown {
			head(3, "`"+name+"`"+def)
		} else {
			fmt.Fprintf(w, "%s%s\n", name, def)
		}
		if s := scheduler.PathSummary(name); s != "" {
			para("    ", s)
		}
		opts := scheduler.PathOptions(name)
		if len(opts) == 0 {
			if !markdown {
				fmt.Fprintln(w)
			}
			continue
		}
		if markdown {
			fmt.Fprintf(w, "| option | values | default | what it does |\n| --- | --- | --- | --- |\n")
			for _, o := range opts {
				vals := "true, false"
				if !o.Bool() {
					vals = strings.Join(o.Choices, ", ")
				}
				fmt.Fprintf(w, "| `%s` | %s | `%s` | %s |\n", o.Name, vals, o.Default, strings.ReplaceAll(o.Doc, "|", "\\|"))
			}
			fmt.Fprintln(w)
			continue
		}
		fmt.Fprintf(w, "    options:\n")
		for _, o := range opts {
			vals := "true|false"
			if !o.Bool() {
				vals = strings.Join(o.Choices, "|")
			}
			fmt.Fprintf(w, "      %s = %s (default %s)\n", o.Name, vals, o.Default)
			fmt.Fprintf(w, "%s\n", wrap(o.Doc, "          ", 76))
		}
		fmt.Fprintln(w)
	}
	head(2, "Stream schedulers (transport.stream_scheduler)")
	for _, name := range scheduler.StreamSchedulers() {
		def := ""
		if name == scheduler.DefaultStream {
			def = " (default)"
		}
		if markdown {
			head(3, "`"+name+"`"+def)
		} else {
			fmt.Fprintf(w, "%s%s\n", name, def)
		}
		if s := scheduler.StreamSummary(name); s != "" {
			para("    ", s)
		}
		if !markdown {
			fmt.Fprintln(w)
		}
	}
}

// wrap fills s into lines of at most width columns, each starting with
// indent (a word longer than the line stands alone).
func wrap(s, indent string, width int) string {
	var b strings.Builder
	line := indent
	for _, word := range strings.Fields(s) {
		if len(line) > len(indent) && len(line)+1+len(word) > width {
			b.WriteString(line)
			b.WriteByte('\n')
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	b.WriteString(line)
	return b.String()
}
