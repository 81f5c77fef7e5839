// Command gen writes the traces of experiments/traces (package tracegen):
//
//	go run ./experiment/tracegen/gen experiments/traces
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/mpq/mpq/experiment/tracegen"
	"github.com/mpq/mpq/internal/atomicfile"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gen DIR")
		os.Exit(2)
	}
	for _, f := range tracegen.Files() {
		name := filepath.Join(os.Args[1], f.Name)
		if err := atomicfile.Write(name, func(w io.Writer) error { return tracegen.Write(w, f.MS) }); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d opportunities\n", name, len(f.MS))
	}
}
