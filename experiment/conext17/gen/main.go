// Command gen writes the experiment files of experiments/conext17 from
// its data (package conext17), and those of its MPQUIC variant into the
// directory beside it, experiments/conext17-mpquic:
//
//	go run ./experiment/conext17/gen experiments/conext17
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mpq/mpq/experiment/conext17"
	"github.com/mpq/mpq/internal/atomicfile"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	for _, c := range conext17.Classes {
		if err := gen(dir, c); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func gen(dir, class string) error {
	src := filepath.Join(dir, "data", class+".json")
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := conext17.Read(f)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	for _, v := range []conext17.Variant{conext17.Paper, conext17.MPQUIC} {
		out := filepath.Join(filepath.Dir(filepath.Clean(dir)), v.Dir())
		if err := os.MkdirAll(out, 0o755); err != nil {
			return err
		}
		name := filepath.Join(out, class+".toml")
		if err := atomicfile.Write(name, func(w io.Writer) error {
			_, err := w.Write(conext17.VariantExperiment(d, "experiments/conext17/data/"+class+".json", v))
			return err
		}); err != nil {
			return err
		}
		fmt.Printf("%s: %d scenario entries\n", name, len(d.Scenarios))
	}
	return nil
}
