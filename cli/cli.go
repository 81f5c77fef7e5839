// Package cli is the mpq command line: the multipath QUIC research tool
// that runs experiment files (in the simulator or over real sockets), and
// serves and fetches files over mpquic (hq-interop). cmd/mpq's main only
// calls Main; a program of your own that calls Main and imports packages
// registering schedulers (a blank import is enough) is a full mpq that
// knows them by name (docs/guides/schedulers.md, "An mpq with your scheduler").
//
// Usage:
//
//	mpq run FILE [flags]
//	mpq serve --addr HOST:PORT --root DIR [flags]
//	mpq get --addr HOST:PORT --path /FILE [--out FILE] [flags]
//	mpq help [COMMAND]
//	mpq help schedulers
//	mpq --version
//
// "mpq help COMMAND" (or "mpq COMMAND --help") prints a command's usage,
// flags and examples.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/mpq/mpq/internal/buildinfo"
)

// Exit statuses, as docs/reference/cli.md states them.
const (
	// exitFailure: the command could not do its job (a run failed, the
	// server is unreachable, the file is missing on the server).
	exitFailure = 1
	// exitUsage: a bad command line or a bad input file (unknown flag,
	// missing or malformed experiment file, unknown name); nothing ran.
	exitUsage = 2
	// exitInterrupted: stopped by SIGINT or SIGTERM (128 + SIGINT) before
	// the work was done; finished results are kept.
	exitInterrupted = 130
)

// commands are mpq's subcommands. A command's help text is
// help/NAME.txt; its code is in NAME.go.
var commands = map[string]command{
	"serve":     {"serve files over hq-interop until interrupted", setupServe},
	"get":       {"download one file over hq-interop and print a JSON summary", setupGet},
	"run":       {"run an experiment file (or its sweep) and write the results", setupRun},
	"aggregate": {"rebuild a sweep's runs.csv, aggregate.csv and aggregate.json", setupAggregate},
	"plot":      {"draw a figure (or its table) from the results of mpq run", setupPlot},
	"paper":     {"rerun the reference paper's experiments and regenerate the reference paper's figures and tables", setupPaper},
	"merge":     {"join the halves of two-host runs (mpq run --role) into ordinary runs", setupMerge},
	"testbed":   {"bring the namespace testbed of an experiment file up or down, or show it", setupTestbed},
}

// Main runs the mpq command line args (without the program name) on the
// process's standard output and error and returns the exit status (0, or
// 1, 2 or 130 as docs/reference/cli.md states them); main functions pass it to
// os.Exit. The first SIGINT or SIGTERM cancels the command, which then
// stops cleanly; a second one kills the process as usual.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	endProfiles := startProfiles(os.Stderr)
	code := run(ctx, args, os.Stdout, os.Stderr)
	endProfiles()
	stop()
	return code
}

// run runs the command line args (without the program name) and returns
// the exit status. Cancelling ctx stops a running command: mpq serve
// returns 0, a download in progress fails.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "help":
		return help(ctx, args[1:], stdout, stderr)
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, buildinfo.Read())
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mpq: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd.exec(ctx, args[0], args[1:], stdout, stderr)
}

// help runs "mpq help [COMMAND]".
func help(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" {
		usage(stdout)
		return 0
	}
	if len(args) > 1 {
		fmt.Fprintf(stderr, "mpq help: one COMMAND expected, got %d arguments\n", len(args))
		return exitUsage
	}
	if args[0] == "schedulers" {
		writeSchedulers(stdout, false)
		return 0
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mpq help: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return cmd.exec(ctx, args[0], []string{"--help"}, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: mpq COMMAND [arguments and flags]\n       mpq help COMMAND\n       mpq help schedulers\n       mpq --version\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nFlags may come before, between and after a command's arguments; \"--\" ends\nthe flags. \"mpq help COMMAND\" shows a command's flags and examples;\n\"mpq help schedulers\" every path and stream scheduler with its options.")
}
