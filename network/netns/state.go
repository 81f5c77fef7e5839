package netns

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StateDir holds a directory per testbed (its Tag): state.json, and in
// forwarder mode the forwarder's configuration, log and statistics. It is
// on tmpfs, like the namespaces (/run/netns): both go at a reboot.
var StateDir = "/run/mpq/testbed"

// State is what Up made, written to state.json before it makes anything,
// so that Down (or a later Up, once the owner died) removes it all.
type State struct {
	Tag        string   `json:"tag"`
	Mode       Mode     `json:"mode"`
	Namespaces []string `json:"namespaces"`
	// Owner is the process whose run the testbed belongs to (mpq run
	// --backend netns), with its start time; zero for a testbed made by
	// mpq testbed up, which lasts until mpq testbed down.
	Owner Proc `json:"owner"`
	// Forwarder is the forwarder process (forwarder mode).
	Forwarder Proc      `json:"forwarder"`
	File      string    `json:"file,omitempty"`
	Created   time.Time `json:"created"`
}

// Proc identifies a process: its PID and its start time (in clock ticks
// since boot, from /proc/PID/stat), so that a reused PID is not taken for
// it.
type Proc struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Self is the calling process.
func Self() Proc { return procOf(os.Getpid()) }

func procOf(pid int) Proc {
	st, _ := procStart(pid)
	return Proc{PID: pid, Start: st}
}

// procStart reads a process's start time from /proc.
func procStart(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count
	// from the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("bad /proc stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return 0, errors.New("bad /proc stat")
	}
	return strconv.ParseUint(f[19], 10, 64) // field 22: starttime
}

// Alive reports whether the process still runs (and is the same one).
func (p Proc) Alive() bool {
	if p.PID <= 0 {
		return false
	}
	st, err := procStart(p.PID)
	return err == nil && st == p.Start
}

func stateDir(tag string) string { return filepath.Join(StateDir, tag) }

func statePath(tag string) string { return filepath.Join(stateDir(tag), "state.json") }

// writeState writes st through a temporary file.
func writeState(st *State) error {
	if err := os.MkdirAll(stateDir(st.Tag), 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := statePath(st.Tag) + ".tmp"
	if err := os.WriteFile(tmp, append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, statePath(st.Tag))
}

// ReadState reads the state of testbed tag (fs.ErrNotExist if none).
func ReadState(tag string) (*State, error) {
	b, err := os.ReadFile(statePath(tag))
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", statePath(tag), err)
	}
	return &st, nil
}

// Testbeds lists the tags of the testbeds with a state.
func Testbeds() ([]string, error) {
	ents, err := os.ReadDir(StateDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var tags []string
	for _, d := range ents {
		if _, err := os.Stat(statePath(d.Name())); err == nil {
			tags = append(tags, d.Name())
		}
	}
	sort.Strings(tags)
	return tags, nil
}

// Orphaned reports whether a testbed belonged to a run whose process
// died (killed with SIGKILL, say): nobody will take it down.
func (st *State) Orphaned() bool { return st.Owner.PID != 0 && !st.Owner.Alive() }

// stopProc stops a process of the testbed: SIGTERM, then SIGKILL after
// grace. It only signals a process that is still the one recorded.
func stopProc(p Proc, grace time.Duration) error {
	if !p.Alive() {
		return nil
	}
	if err := syscall.Kill(p.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !p.Alive() || zombie(p.PID) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p.Alive() {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	return nil
}

// zombie reports whether a process has exited but not been waited for.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] == 'Z'
}
