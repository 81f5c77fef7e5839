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
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mpq: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mpq COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
}

// parseFlags parses a subcommand's flags; it returns the exit status to use
// when parsing ended the command (help or an error), or -1 to go on.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) int {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mpq %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage
	}
	return -1
}
