package netns

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mpq/mpq/experiment"
)

func loadGolden(t *testing.T) *experiment.Experiment {
	t.Helper()
	runs, err := experiment.Load(filepath.Join("testdata", "golden.toml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &runs[0]
}

// The netem branch cannot run on a kernel without netem: it is tested by
// the exact commands it generates for an experiment with every kind of
// link, checked by hand in testdata/netem-plan.txt (path 0: 100 Mbit/s,
// 25 ms each way, 0.05 % random loss, a queue of one BDP, 625,000 bytes;
// path 1 up: 20 Mbit/s, 10 ms plus uniform jitter [0, 2 ms) as netem's
// 11 ms +- 1 ms, Gilbert loss of 1 % in bursts of 4 (Bad->Good 25 %,
// Good->Bad 0.25 x 1 %/99 % = 0.252525 %), a 30 kB queue; path 1 down:
// unlimited rate, 30 ms and the same jitter; netem's rate keeps jittered
// packets in order; custom addresses on path 1). The rates charge the
// UDP payload (packet overhead -42: 8 + 20 + 14 header bytes off the
// frame); netem's limits, in datagrams of 1350 bytes: path 0, the
// queue's 625,000 bytes hold 462 and 25 ms at 100 Mbit/s 231.5 (rounded
// to 231), 693; path 1 up, 30,000 bytes hold 22 and 11 ms (the mean
// delay) at 20 Mbit/s 20.4 (20), 42. The forwarder's plan
// (testdata/forwarder-plan.txt) is checked the same way; the forwarder
// itself runs in the root tests.
func TestPlansGolden(t *testing.T) {
	e := loadGolden(t)
	for _, tt := range []struct {
		mode Mode
		file string
	}{{ModeNetem, "netem-plan.txt"}, {ModeForwarder, "forwarder-plan.txt"}} {
		topo, err := FromExperiment(e, "golden", tt.mode)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if _, err := Up(context.Background(), topo, Options{Out: &out, DryRun: true, Forwarder: []string{"mpq", "testbed", "forward"}}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if !strings.HasPrefix(l, "+ ") {
				t.Fatalf("%s: line %q is not a command", tt.mode, l)
			}
			got = append(got, strings.TrimPrefix(l, "+ "))
		}
		wantB, err := os.ReadFile(filepath.Join("testdata", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Split(strings.TrimSpace(string(wantB)), "\n")
		for i := range max(len(got), len(want)) {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w {
				t.Errorf("%s line %d:\n got  %s\n want %s", tt.file, i+1, g, w)
				break
			}
		}
	}
}

// An auto plan in a dry run is netem's, and says so; down's plan removes
// the three namespaces and the state.
func TestDryRunAutoAndDown(t *testing.T) {
	e := loadGolden(t)
	topo, _ := FromExperiment(e, "golden", "")
	var out bytes.Buffer
	st, err := Up(context.Background(), topo, Options{Out: &out, DryRun: true})
	if err != nil || st.Mode != ModeNetem || !strings.HasPrefix(out.String(), "# dry run: the plan for a kernel with netem") {
		t.Fatalf("mode %v, %v:\n%s", st.Mode, err, out.String())
	}
	out.Reset()
	if err := Down(context.Background(), "golden", Options{Out: &out, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	want := "+ ip netns del golden-client\n+ ip netns del golden-router\n+ ip netns del golden-server\n+ rm -r " + filepath.Join(StateDir, "golden") + "\n"
	if out.String() != want {
		t.Errorf("down plan:\n%s", out.String())
	}
}

func TestBadTags(t *testing.T) {
	for _, tag := range []string{"", "A", "-x", "a b", "a/b", strings.Repeat("a", 25)} {
		if CheckTag(tag) == nil {
			t.Errorf("tag %q accepted", tag)
		}
	}
	if err := Down(context.Background(), "../etc", Options{}); err == nil {
		t.Error("down of a bad tag")
	}
}

// completeChecksum completes a partial checksum as the kernel would: here
// the UDP checksum of a datagram with a known checksum (computed by hand
// below), given the pseudo-header sum the sending kernel leaves in the
// field.
func TestCompleteChecksum(t *testing.T) {
	// IPv4 10.0.0.1 -> 10.0.0.2, UDP 1000 -> 2000, payload "hi".
	udp := []byte{0x03, 0xe8, 0x07, 0xd0, 0x00, 0x0a, 0, 0, 'h', 'i'}
	// Pseudo-header: 0a00 + 0001 + 0a00 + 0002 + 0011 + 000a = 0x141e.
	// Header and payload: 03e8 + 07d0 + 000a + 6869 = 0x742b.
	// Sum 0x141e + 0x742b = 0x8849, checksum ^0x8849 = 0x77b6 (as the
	// checksum of pseudo-header and datagram computed in one go).
	frame := append(make([]byte, 34), udp...)
	frame[34+6], frame[34+7] = 0x14, 0x1e // the pseudo-header sum, as CHECKSUM_PARTIAL leaves it
	if !completeChecksum(frame, 34, 6) {
		t.Fatal("refused")
	}
	if got := uint16(frame[40])<<8 | uint16(frame[41]); got != 0x77b6 {
		t.Errorf("checksum %#04x, want 0x77b6", got)
	}
	// A sum of 0xffff gives 0xffff, not 0 (UDP's "no checksum").
	z := []byte{0xff, 0xff, 0, 0}
	if completeChecksum(z, 0, 2); z[2] != 0xff || z[3] != 0xff {
		t.Errorf("zero checksum as %x", z[2:])
	}
	for _, bad := range [][2]int{{-1, 0}, {0, 40}, {40, 0}} {
		if completeChecksum(make([]byte, 40), bad[0], bad[1]) {
			t.Errorf("offsets %v accepted", bad)
		}
	}
}

// The forwarder's link model charges a UDP datagram's payload, as the
// simulator does: the frame less its Ethernet, IP and UDP headers; for
// another IP packet its IP payload, for another frame what follows the
// Ethernet header; never less than 1.
func TestChargedBytes(t *testing.T) {
	frame := func(ethType uint16, ip []byte, payload int) []byte {
		f := make([]byte, 14, 14+len(ip)+payload)
		f[12], f[13] = byte(ethType>>8), byte(ethType)
		f = append(f, ip...)
		return append(f, make([]byte, payload)...)
	}
	v4 := func(proto byte, ihl int) []byte {
		h := make([]byte, ihl)
		h[0], h[9] = 0x40|byte(ihl/4), proto
		return h
	}
	v6 := func(next byte) []byte {
		h := make([]byte, 40)
		h[0], h[6] = 0x60, next
		return h
	}
	tests := []struct {
		name  string
		frame []byte
		want  int
	}{
		{"IPv4 UDP", frame(0x0800, v4(17, 20), 8+1350), 1350},
		{"IPv4 UDP with options", frame(0x0800, v4(17, 24), 8+100), 100},
		{"IPv4 TCP: the IP payload", frame(0x0800, v4(6, 20), 20+1000), 1020},
		{"IPv6 UDP", frame(0x86dd, v6(17), 8+1230), 1230},
		{"IPv6 other: the IP payload", frame(0x86dd, v6(58), 64), 64},
		{"ARP: after the Ethernet header", frame(0x0806, nil, 28), 28},
		{"empty UDP datagram: at least 1", frame(0x0800, v4(17, 20), 8), 1},
		{"truncated IPv4 header", frame(0x0800, nil, 10), 10},
		{"runt", make([]byte, 6), 6},
	}
	for _, tc := range tests {
		if got := ChargedBytes(tc.frame); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// An MPTCP experiment's plan makes the client's address on every path but
// the first a subflow endpoint, and lets both ends have that many
// subflows; other kinds get no MPTCP commands.
func TestMPTCPPlan(t *testing.T) {
	e := loadGolden(t)
	tcp, err := FromExperiment(e, "mpqtest", ModeForwarder)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range tcp.UpPlan() {
		if strings.Contains(c.String(), "mptcp") {
			t.Errorf("mpq plan has %s", c)
		}
	}
	e.Transport.Kind = experiment.KindMPTCP
	m, err := FromExperiment(e, "mpqtest", ModeForwarder)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range m.UpPlan() {
		if strings.Contains(c.String(), "mptcp") {
			got = append(got, c.String())
		}
	}
	c1, _ := e.Addrs(1)
	want := []string{
		"ip -n mpqtest-client mptcp limits set subflow 1 add_addr_accepted 1",
		"ip -n mpqtest-server mptcp limits set subflow 1 add_addr_accepted 1",
		"ip -n mpqtest-client mptcp endpoint add " + c1.Addr().String() + " dev p1 subflow",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("MPTCP commands:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
