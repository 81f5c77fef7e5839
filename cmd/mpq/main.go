// Command mpq is the multipath QUIC research tool: it serves and fetches
// files over mpquic (hq-interop) and, in later subcommands, runs
// experiments, plots results and manages testbeds.
//
// Usage:
//
//	mpq serve --addr HOST:PORT --root DIR [flags]
//	mpq get --addr HOST:PORT --path /FILE [--out FILE] [flags]
//
// Run "mpq COMMAND -h" for the flags of a command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/mpq/mpq/internal/buildinfo"
)

// exitUsage is the exit status for bad command lines and bad input files.
const exitUsage = 2

type command struct {
	summary string
	// run runs the command until it is done or ctx is cancelled.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"serve": {"serve files over hq-interop until interrupted", runServe},
	"get":   {"download one file over hq-interop and print a JSON summary", runGet},
	"run":   {"run an experiment file (or its sweep) and write the results", runRun},
}

func main() {
	// The first SIGINT or SIGTERM cancels the command, which then stops
	// cleanly; a second one kills the process as usual.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command line args (without the program name) and returns
// the exit status. Cancelling ctx stops a running command: mpq serve
// returns 0, a download in progress fails.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" || args[0] == "version" {
		fmt.Fprintln(stdout, buildinfo.Read())
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mpq: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mpq COMMAND [flags]\n       mpq --version\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}

// parseFlags parses a subcommand's flags, which take no positional
// arguments; it returns the exit status to use when parsing ended the
// command (help or an error), or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	pos, code := parseArgs(fs, args, stderr)
	if code >= 0 {
		return code
	}
	if len(pos) > 0 {
		fmt.Fprintf(stderr, "mpq %s: unexpected argument %q\n", fs.Name(), pos[0])
		return exitUsage
	}
	return -1
}

// parseArgs parses a subcommand's command line, in which flags may come
// before, between and after the positional arguments (the flag package
// alone stops at the first positional argument and would silently ignore
// every flag after it). Everything after "--" is positional. It returns the
// positional arguments in order, and the exit status to use when parsing
// ended the command (help or an error), or -1 to go on.
func parseArgs(fs *flag.FlagSet, args []string, stderr io.Writer) (pos []string, code int) {
	fs.SetOutput(stderr)
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, 0
			}
			return nil, exitUsage
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, -1
		}
		// Parse consumes a "--" and stops: what follows is positional.
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), -1
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
