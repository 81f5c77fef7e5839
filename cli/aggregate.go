package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mpq/mpq/resultset"
)

// setupAggregate registers aggregate's flags (none); the command rebuilds
// runs.csv, aggregate.csv and aggregate.json from the run directories
// below DIR.
func setupAggregate(fs *flag.FlagSet) runFunc {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		if len(args) != 1 {
			fmt.Fprintf(stderr, "mpq aggregate: one results DIR expected, got %d arguments\n", len(args))
			fmt.Fprintln(stderr, synopsis("aggregate"))
			return exitUsage
		}
		dir := args[0]
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "mpq aggregate: %s is not a directory\n", dir)
			return exitUsage
		}
		n, err := writeAggregate(dir, nil, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "mpq aggregate: %v\n", err)
			return exitFailure
		}
		fmt.Fprintf(stdout, "%s: %d runs aggregated into %s, %s and %s\n", dir, n, resultset.RunsCSV, resultset.AggregateCSV, resultset.AggregateJSON)
		return 0
	}
}

// writeAggregate aggregates the runs dirs below dir (every run found when
// nil) into dir's runs.csv, aggregate.csv and aggregate.json, printing
// its warnings; it returns the number of runs.
func writeAggregate(dir string, dirs []string, stderr io.Writer) (int, error) {
	a, err := resultset.Build(dir, dirs)
	if err != nil {
		return 0, err
	}
	for _, w := range a.Warnings {
		fmt.Fprintf(stderr, "mpq aggregate: warning: %s\n", w)
	}
	return a.Runs, a.Write(dir)
}
