package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
)

// Profiles of the whole command, for developers measuring the
// simulator's speed or a sweep's memory on a real command line
// (docs/design/simulator.md, "Where the time goes"): MPQ_CPUPROFILE=FILE writes a CPU profile of the
// command, MPQ_MEMPROFILE=FILE a heap profile taken when it ends, after
// a garbage collection (what the process still holds), both for go tool
// pprof. Unset, they cost nothing.
const (
	envCPUProfile = "MPQ_CPUPROFILE"
	envMemProfile = "MPQ_MEMPROFILE"
)

// startProfiles starts the profiles the environment asks for and returns
// the function that ends them. A profile that cannot be written is
// reported on stderr and skipped: it never changes the command's result.
func startProfiles(stderr io.Writer) (stop func()) {
	var cpu *os.File
	if name := os.Getenv(envCPUProfile); name != "" {
		f, err := os.Create(name)
		if err == nil {
			err = pprof.StartCPUProfile(f)
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "mpq: %s: %v\n", envCPUProfile, err)
		} else {
			cpu = f
		}
	}
	return func() {
		if cpu != nil {
			pprof.StopCPUProfile()
			if err := cpu.Close(); err != nil {
				fmt.Fprintf(stderr, "mpq: %s: %v\n", envCPUProfile, err)
			}
		}
		if name := os.Getenv(envMemProfile); name != "" {
			runtime.GC()
			if err := writeHeapProfile(name); err != nil {
				fmt.Fprintf(stderr, "mpq: %s: %v\n", envMemProfile, err)
			}
		}
	}
}

func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
