package cli

import (
	"context"
	"embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// A command is one subcommand of mpq.
type command struct {
	// summary is the line "mpq help" shows.
	summary string
	// setup registers the command's flags on fs and returns the function
	// that runs the command with its positional arguments once the
	// command line is parsed.
	setup func(fs *flag.FlagSet) runFunc
}

// runFunc runs a command with its positional arguments and returns the
// exit status.
type runFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// helpTexts holds each command's help: help/NAME.txt starts with the
// "usage:" line, describes the command and ends with examples; the flags
// follow when it is printed.
//
//go:embed help/*.txt
var helpTexts embed.FS

// helpText returns the help text of command name.
func helpText(name string) string {
	b, err := helpTexts.ReadFile("help/" + name + ".txt")
	if err != nil {
		return "usage: mpq " + name + " [flags]\n"
	}
	return string(b)
}

// synopsis is the first line of a command's help text.
func synopsis(name string) string {
	s, _, _ := strings.Cut(helpText(name), "\n")
	return s
}

// flagSet makes the flag set of command name with its flags registered.
func (c command) flagSet(name string) (*flag.FlagSet, runFunc) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Errors and help are printed by exec, help on stdout.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs, c.setup(fs)
}

// exec parses a command's arguments and runs it. "--help" anywhere
// prints the command's help on stdout and exits 0; a bad flag exits 2
// with the synopsis on stderr.
func (c command) exec(ctx context.Context, name string, args []string, stdout, stderr io.Writer) int {
	fs, runf := c.flagSet(name)
	pos, err := parseArgs(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(stdout, name, fs)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mpq %s: %v\n%s\nRun \"mpq help %s\" for the flags and examples.\n", name, err, synopsis(name), name)
		return exitUsage
	}
	return runf(ctx, pos, stdout, stderr)
}

// printHelp prints a command's help text and its flags.
func printHelp(w io.Writer, name string, fs *flag.FlagSet) {
	fmt.Fprint(w, strings.TrimRight(helpText(name), "\n")+"\n")
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// parseArgs parses a command line in which flags may come before, between
// and after the positional arguments (the flag package alone stops at the
// first positional argument and would silently ignore every flag after
// it). Everything after "--" is positional. It returns the positional
// arguments in order, or flag.ErrHelp for -h or --help, or the parse
// error.
func parseArgs(fs *flag.FlagSet, args []string) (pos []string, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// Parse consumes a "--" and stops: what follows is positional.
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// noArgs reports, for a command that takes no positional arguments,
// whether there are none; otherwise it says so on stderr.
func noArgs(name string, args []string, stderr io.Writer) bool {
	if len(args) == 0 {
		return true
	}
	fmt.Fprintf(stderr, "mpq %s: unexpected argument %q (%s takes flags only)\n%s\n", name, args[0], name, synopsis(name))
	return false
}

// printErr prints err on stderr, each of its lines as "mpq NAME: line".
func printErr(stderr io.Writer, name string, err error) {
	for _, l := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(stderr, "mpq %s: %s\n", name, l)
	}
}
