package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/mpq/mpq/runner"
)

// setupMerge registers merge's flags: it joins the halves of two-host
// runs (mpq run --role) into ordinary runs.
func setupMerge(fs *flag.FlagSet) runFunc {
	force := fs.Bool("force", false, "merge runs that were merged before again, replacing their results")
	correct := fs.Bool("correct-clock", false, "move the server's times into the client's clock by the offset clock.json measured")
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		if len(args) == 0 {
			fmt.Fprintf(stderr, "mpq merge: no DIR given\n%s\n", synopsis("merge"))
			return exitUsage
		}
		var dirs []string
		for _, a := range args {
			found, err := halvesUnder(a)
			if err != nil {
				fmt.Fprintf(stderr, "mpq merge: %v\n", err)
				return exitFailure
			}
			if len(found) == 0 {
				fmt.Fprintf(stderr, "mpq merge: no run under %s has both halves (client/%s and server/%s)\n", a, runner.HalfFile, runner.HalfFile)
				return exitFailure
			}
			dirs = append(dirs, found...)
		}
		failed := 0
		for _, d := range dirs {
			if ctx.Err() != nil {
				return exitInterrupted
			}
			if _, err := os.Stat(filepath.Join(d, "summary.json")); err == nil && !*force {
				fmt.Fprintf(stderr, "mpq merge: %s: merged already (--force merges it again)\n", d)
				continue
			}
			res, err := mergeRun(d, runner.MergeOptions{CorrectClock: *correct})
			if err != nil {
				failed++
				fmt.Fprintf(stderr, "mpq merge: %s: %v\n", d, err)
				continue
			}
			fmt.Fprintln(stdout, oneLine(d, res.Summary))
		}
		if failed > 0 {
			return exitFailure
		}
		return 0
	}
}

// halvesUnder lists the run directories under root (root included) that
// hold a client's and a server's half.
func halvesUnder(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if d.Name() == "client" || d.Name() == "server" || d.Name() == "qlog" {
			return filepath.SkipDir
		}
		c, cerr := os.Stat(filepath.Join(p, "client", runner.HalfFile))
		s, serr := os.Stat(filepath.Join(p, "server", runner.HalfFile))
		if cerr == nil && serr == nil && !c.IsDir() && !s.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// mergeRun merges the halves in dir/client and dir/server into dir: the
// result files are written into a temporary directory, then moved into
// dir one by one, summary.json last.
func mergeRun(dir string, opt runner.MergeOptions) (*runner.Result, error) {
	e, err := readExperiment(filepath.Join(dir, "client", experimentFile))
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, ".merge.tmp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	res, err := runner.MergeWith(e, filepath.Join(dir, "client"), filepath.Join(dir, "server"), tmp, opt)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return nil, err
	}
	sort.Slice(ents, func(i, j int) bool { return ents[j].Name() == "summary.json" })
	var errs []error
	for _, d := range ents {
		to := filepath.Join(dir, d.Name())
		if d.IsDir() {
			errs = append(errs, os.RemoveAll(to))
		}
		errs = append(errs, os.Rename(filepath.Join(tmp, d.Name()), to))
	}
	return res, errors.Join(errs...)
}
