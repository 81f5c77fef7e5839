package cli

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode"
)

// A readmeBlock is one ```sh block of README.md (or of another Markdown
// file of the repository).
type readmeBlock struct {
	line  int      // of the opening fence
	mark  string   // the <!-- readme-test: ... --> comment before it
	lines []string // its command lines (comments and blank lines dropped)
}

// readmeBlocks returns README.md's sh blocks.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	blocks := docBlocks(t, "../README.md")
	if len(blocks) < 3 {
		t.Fatalf("README.md has %d sh blocks", len(blocks))
	}
	return blocks
}

// captureGuide is the guide whose recipe TestCaptureRecipe runs.
const captureGuide = "../docs/guides/captures.md"

// docBlocks returns the sh blocks of a Markdown file.
func docBlocks(t *testing.T, name string) []readmeBlock {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var blocks []readmeBlock
	var cur *readmeBlock
	mark := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case cur == nil && l == "```sh":
			cur = &readmeBlock{line: n, mark: mark}
		case cur == nil && strings.HasPrefix(l, "<!-- readme-test:"):
			mark = l
		case cur == nil:
			if strings.TrimSpace(l) != "" {
				mark = ""
			}
		case l == "```":
			blocks = append(blocks, *cur)
			cur, mark = nil, ""
		default:
			if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "#") {
				cur.lines = append(cur.lines, s)
			}
		}
	}
	return blocks
}

// readmeOutput returns the lines of the plain ``` block that follows the
// README line containing intro.
func readmeOutput(t *testing.T, intro string) []string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, intro)
	if i < 0 {
		t.Fatalf("README.md has no %q", intro)
	}
	j := strings.Index(s[i:], "\n```\n")
	if j < 0 {
		t.Fatalf("no output block after %q", intro)
	}
	block := s[i+j+5:]
	block = block[:strings.Index(block, "\n```")]
	return strings.Split(block, "\n")
}

// readmeEnv is a copy of the repository to run README's commands in: a
// directory of links to the checkout's files (so that results and
// binaries stay out of the checkout), and a bin directory on PATH.
type readmeEnv struct {
	dir, bin, tmp string
	env           []string
	port          string
	// stdout holds what each command line printed on stdout.
	stdout map[string]string
}

func newReadmeEnv(t *testing.T) *readmeEnv {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	e := &readmeEnv{dir: t.TempDir(), bin: t.TempDir(), tmp: t.TempDir(), stdout: map[string]string{}}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range entries {
		switch en.Name() {
		case ".git", "results", "mpq":
			continue
		}
		if err := os.Symlink(filepath.Join(root, en.Name()), filepath.Join(e.dir, en.Name())); err != nil {
			t.Fatal(err)
		}
	}
	e.env = append(os.Environ(), "PATH="+e.bin+string(os.PathListSeparator)+os.Getenv("PATH"), "GOBIN="+e.bin)
	// README's servers listen on 4433: the test takes a free port instead,
	// so that it does not collide with other programs on the machine.
	l, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, e.port, _ = net.SplitHostPort(l.LocalAddr().String())
	l.Close()
	return e
}

// expectedExit is the "# exit N" a README command line ends with, or 0.
var expectedExit = regexp.MustCompile(`#\s*exit (\d+)\s*$`)

// command returns a README line as the test runs it: with the test's
// port for 4433 and its own temporary directory for /tmp.
func (e *readmeEnv) command(line string) string {
	return strings.NewReplacer("4433", e.port, "/tmp/", e.tmp+"/").Replace(line)
}

// job is a command README starts in the background.
type job struct {
	cmd  *exec.Cmd
	out  *readyWriter
	done chan error
}

// readyWriter collects a job's output and closes ready once it says the
// job serves or listens.
type readyWriter struct {
	output
	ready chan struct{}
	once  sync.Once
}

var readyLine = regexp.MustCompile(`serving .* on |listening on `)

func (r *readyWriter) Write(p []byte) (int, error) {
	n, err := r.output.Write(p)
	if readyLine.MatchString(r.String()) {
		r.once.Do(func() { close(r.ready) })
	}
	return n, err
}

// start runs a background command and waits until it is ready: its
// output says it serves or listens.
func (e *readmeEnv) start(t *testing.T, line string) *job {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+e.command(strings.TrimSuffix(line, "&")))
	cmd.Dir, cmd.Env = e.dir, e.env
	j := &job{cmd: cmd, out: &readyWriter{output: output{addr: make(chan string, 1)}, ready: make(chan struct{})}, done: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = j.out, j.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", line, err)
	}
	go func() { j.done <- cmd.Wait() }()
	select {
	case <-j.out.ready:
	case err := <-j.done:
		t.Fatalf("%s ended before it was ready (%v):\n%s", line, err, j.out.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s not ready within 30 s:\n%s", line, j.out.String())
	}
	return j
}

// stop interrupts a background command and waits for it; mpq serve
// exits 0 when interrupted.
func (j *job) stop(t *testing.T, line string) {
	t.Helper()
	j.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-j.done:
		if err != nil && strings.Contains(line, "mpq ") {
			t.Errorf("%s: %v after interruption:\n%s", line, err, j.out.String())
		}
	case <-time.After(30 * time.Second):
		j.cmd.Process.Kill()
		t.Errorf("%s did not stop within 30 s of SIGINT", line)
	}
	t.Logf("$ %s  (stopped)\n%s", line, j.out.String())
}

// run runs a README command line and checks its exit status.
func (e *readmeEnv) run(t *testing.T, line string) string {
	t.Helper()
	want := 0
	if m := expectedExit.FindStringSubmatch(line); m != nil {
		want, _ = strconv.Atoi(m[1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", e.command(line))
	cmd.Dir, cmd.Env = e.dir, e.env
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := stdout.String() + stderr.String()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s: %v", line, err)
		}
		code = ee.ExitCode()
	}
	if code != want {
		t.Errorf("README command %q exited with %d, README says %d:\n%s", line, code, want, out)
	}
	t.Logf("$ %s  (exit %d)\n%s", line, code, out)
	e.stdout[line] = stdout.String()
	return stdout.String()
}

// runBlock runs a block's lines in order: "CMD &" starts a background job,
// "kill %N ..." stops jobs, "go test" lines are skipped (this is a test).
func (e *readmeEnv) runBlock(t *testing.T, b readmeBlock) {
	t.Helper()
	var jobs []*job
	var lines []string
	defer func() {
		for i, j := range jobs {
			if j != nil {
				j.stop(t, lines[i])
			}
		}
	}()
	for _, l := range b.lines {
		switch {
		case strings.HasPrefix(l, "go test"):
			continue
		case strings.HasSuffix(l, "&"):
			jobs = append(jobs, e.start(t, l))
			lines = append(lines, l)
		case strings.HasPrefix(l, "kill %"):
			for _, f := range strings.Fields(l)[1:] {
				n, err := strconv.Atoi(strings.TrimPrefix(f, "%"))
				if err != nil || n < 1 || n > len(jobs) || jobs[n-1] == nil {
					t.Fatalf("README line %q: no job %s", l, f)
				}
				jobs[n-1].stop(t, lines[n-1])
				jobs[n-1] = nil
			}
		default:
			e.run(t, l)
		}
	}
}

// TestREADMECommands runs every command of README.md's sh blocks as shown
// (with a free port for 4433) in a copy of the repository, after
// installing mpq as README says, and checks each exit status: 0, or the
// "# exit N" the line ends with. Blocks marked <!-- readme-test: ... -->
// have a test of their own.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mpq and runs README's commands")
	}
	e := newReadmeEnv(t)
	ran := 0
	for _, b := range readmeBlocks(t) {
		if b.mark != "" {
			continue
		}
		t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) {
			e.runBlock(t, b)
		})
		ran++
	}
	// The blocks README must have: the quickstart, getting the binary,
	// serve and get.
	for _, want := range []string{"go run ./cmd/mpq run experiments/quickstart.toml", "go install ./cmd/mpq", "mpq serve", "mpq get", "mpq run missing.toml"} {
		found := false
		for _, b := range readmeBlocks(t) {
			for _, l := range b.lines {
				found = found || strings.Contains(l, want)
			}
		}
		if !found {
			t.Errorf("README.md shows no %q", want)
		}
	}
	// The quickstart prints what README shows (the simulator is
	// deterministic; the lines come in any order).
	const quickstart = "go run ./cmd/mpq run experiments/quickstart.toml"
	got := strings.Split(strings.TrimSpace(e.stdout[quickstart]), "\n")
	want := readmeOutput(t, "The quickstart prints")
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the quickstart printed\n%s\nREADME.md shows\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(filepath.Join(e.dir, "mpq")); err != nil {
		t.Errorf("go build ./cmd/mpq left no ./mpq: %v", err)
	}
	// README's commands write nothing into the top of the checkout but
	// what .gitignore ignores there: ./mpq and results/.
	top, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, en := range top {
		if en.Type()&os.ModeSymlink == 0 && en.Name() != "mpq" && en.Name() != "results" {
			t.Errorf("README's commands wrote %s into the repository's root", en.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "results", "quickstart", "transport.path_scheduler=cwr", "summary.json")); err != nil {
		t.Errorf("the quickstart wrote no results: %v", err)
	}
}

// TestCaptureRecipe runs the capture recipe of docs/guides/captures.md (tcpdump on lo, mpq serve
// and mpq get with --no-gso, --no-multipath and --keylog) and checks with
// tshark that the capture dissects: no malformed packet, no frame larger
// than a datagram, and decrypted STREAM frames (issue 14: GSO runs showed
// as one packet plus garbage, PATH_ACK as malformed). It needs root,
// tcpdump and tshark (.ci/run installs them).
func TestCaptureRecipe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mpq and captures packets")
	}
	for _, tool := range []string{"tcpdump", "tshark"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("capturing needs root")
	}
	var recipe *readmeBlock
	for _, b := range docBlocks(t, captureGuide) {
		if strings.Contains(b.mark, "readme-test: capture") {
			recipe = &b
		}
	}
	if recipe == nil {
		t.Fatal(captureGuide + " has no block marked <!-- readme-test: capture")
	}
	e := newReadmeEnv(t)
	build := exec.Command("go", "install", "./cmd/mpq")
	build.Dir, build.Env = e.dir, e.env
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	e.runBlock(t, *recipe)
	pcap, keys := filepath.Join(e.tmp, "mpq.pcap"), filepath.Join(e.tmp, "keys.log")
	tshark := func(args ...string) []string {
		cmd := exec.Command("tshark", append([]string{"-r", pcap, "-o", "tls.keylog_file:" + keys}, args...)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("tshark %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	lens := tshark("-T", "fields", "-e", "frame.len")
	if len(lens) < 10 {
		t.Fatalf("%d packets captured", len(lens))
	}
	for _, l := range lens {
		if n, _ := strconv.Atoi(l); n > 1500 {
			t.Fatalf("a captured frame of %d bytes: GSO was on", n)
		}
	}
	if bad := tshark("-Y", "_ws.malformed || _ws.expert.severity >= warning", "-T", "fields", "-e", "frame.number"); len(bad) > 0 {
		t.Fatalf("%d of %d packets malformed or with warnings (frames %v)", len(bad), len(lens), bad)
	}
	// STREAM frame types are 0x08-0x0f: the 1-RTT packets were decrypted.
	if s := tshark("-Y", "quic.frame_type >= 8 && quic.frame_type <= 15", "-T", "fields", "-e", "frame.number"); len(s) == 0 {
		t.Fatal("no STREAM frame decrypted: the key log did not work")
	}
	t.Logf("%d packets, none malformed", len(lens))
}

// TestREADMEStatus: README's Status does not list as missing what mpq
// has: no command of mpq (or its plural, "plots") after "Not yet".
func TestREADMEStatus(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, status, ok := strings.Cut(string(b), "\n## Status\n")
	if !ok {
		t.Fatal("README.md has no Status section")
	}
	_, notYet, ok := strings.Cut(status, "Not yet:")
	if !ok {
		return
	}
	notYet, _, _ = strings.Cut(notYet, "\n\n")
	for _, w := range strings.FieldsFunc(notYet, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if _, ok := commands[strings.TrimSuffix(w, "s")]; ok {
			t.Errorf("README's Status says %q is not there yet; mpq has the command %s", w, strings.TrimSuffix(w, "s"))
		}
	}
}
