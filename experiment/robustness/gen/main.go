// Command gen writes the experiment files of the robustness grid
// (package robustness) into a directory:
//
//	go run ./experiment/robustness/gen experiments/robustness
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mpq/mpq/experiment/robustness"
	"github.com/mpq/mpq/internal/atomicfile"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	for _, m := range robustness.Messages {
		name := filepath.Join(dir, m.File+".toml")
		if err := atomicfile.Write(name, func(w io.Writer) error {
			_, err := w.Write(robustness.Experiment(m))
			return err
		}); err != nil {
			fmt.Fprintf(os.Stderr, "gen: %s: %v\n", name, err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d points x %d schedulers x %d repetitions\n", name, m.Points(), len(robustness.Schedulers), robustness.Repeat)
	}
}
