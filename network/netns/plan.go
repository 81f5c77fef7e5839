// Package netns is the namespace testbed: a client and a server network
// namespace joined by one path per [[path]] of an experiment, each
// direction of a path with the experiment's rate, delay, jitter, loss and
// queue. It plans and runs the ip and tc commands that build the
// topology, takes it down, and reports what exists.
//
// Where the kernel has netem, a path is a veth pair between the client's
// and the server's namespaces, shaped on each end's egress by one netem
// qdisc: loss, then the rate, delay and jitter (netem's rate serializes
// as the link model does and keeps jittered packets in order), with a
// limit in packets that holds the link's queue of full-size frames. Where it does not (tc says
// "Specified qdisc kind is unknown"), a router namespace sits between
// them: path i is a veth pair from the client to the router and another
// from the router to the server, and a forwarder process in the router
// (Forward) carries every frame between the two through the link model
// of package linkmodel, the simulator's, in both directions, whatever
// the protocol.
//
// The client's address on path i (default 10.i.0.1/24) has a routing
// table of its own, so that whatever it sends goes over path i; the
// server answers over the path of the client address it answers. The
// neighbours are static (no ARP) and IPv6 is off for IPv4 paths, so that
// the links carry the experiment's packets only.
package netns

import (
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/mpq/mpq/experiment"
)

// Mode is how the paths are emulated.
type Mode string

// Modes.
const (
	// ModeNetem: qdiscs on the veths between client and server.
	ModeNetem Mode = "netem"
	// ModeForwarder: the userspace forwarder in a router namespace.
	ModeForwarder Mode = "forwarder"
)

// Topology is the testbed of one experiment.
type Topology struct {
	// Tag names everything the testbed creates: namespaces Tag-client,
	// Tag-server and Tag-router, its state in StateDir/Tag.
	Tag   string
	Mode  Mode
	Paths []Path
	// Bottlenecks are the links shared by paths (forwarder mode only).
	Bottlenecks []experiment.Bottleneck
	// Seed seeds the forwarder's links (linkmodel.Rand).
	Seed uint64
	// MaxPacketSize is the experiment's largest UDP payload: netem's
	// queue is in packets of that size (see netemCmd).
	MaxPacketSize int
	// MPTCP: the experiment runs the kernel's MPTCP over its paths; the
	// client's address on every path but the first is an MPTCP subflow
	// endpoint, and both ends accept that many subflows.
	MPTCP bool
}

// Path is one path of a topology.
type Path struct {
	Up, Down experiment.Link
	// RTT is the path's round-trip propagation delay (it sizes queues
	// given in BDPs).
	RTT            time.Duration
	Client, Server netip.Prefix
	// Changes are the path's scheduled changes ([[path.change]]).
	Changes []experiment.LinkChange
	// Bottleneck and BottleneckDelay are the experiment path's.
	Bottleneck      string
	BottleneckDelay time.Duration
}

var tagRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

// CheckTag reports whether tag can name a testbed: lower-case letters,
// digits and dashes, at most 24.
func CheckTag(tag string) error {
	if !tagRE.MatchString(tag) {
		return fmt.Errorf("testbed name %q: want 1 to 24 lower-case letters, digits and dashes", tag)
	}
	return nil
}

// NeedsForwarder says why netem cannot build an experiment's network
// ("" if it can): a bottleneck shared by paths (netem shapes each veth
// on its own; the paths have no common hop), or a trace-driven link.
func NeedsForwarder(e *experiment.Experiment) string {
	for i, p := range e.Paths {
		if p.Bottleneck != "" {
			return fmt.Sprintf("bottleneck %q is shared by paths, and netem shapes each path's veths on their own", p.Bottleneck)
		}
		if p.Up.Trace != nil || p.Down.Trace != nil {
			return fmt.Sprintf("path %d is driven by a trace, which netem cannot replay", i)
		}
	}
	return ""
}

// CheckMode refuses an experiment the mode cannot build: netem cannot
// build what NeedsForwarder names (the forwarder, and the automatic
// choice, which then takes the forwarder, can).
func CheckMode(e *experiment.Experiment, mode Mode) error {
	if why := NeedsForwarder(e); why != "" && mode == ModeNetem {
		return fmt.Errorf("%s: the netem emulator cannot build it (%s); use --emulator forwarder or auto", e.File, why)
	}
	return nil
}

// FromExperiment is the topology of an experiment. Without a mode, an
// experiment only the forwarder can build gets the forwarder.
func FromExperiment(e *experiment.Experiment, tag string, mode Mode) (*Topology, error) {
	if err := CheckTag(tag); err != nil {
		return nil, err
	}
	if len(e.Paths) == 0 || len(e.Paths) > 99 {
		return nil, fmt.Errorf("%d paths", len(e.Paths))
	}
	if err := CheckMode(e, mode); err != nil {
		return nil, err
	}
	if mode == "" && NeedsForwarder(e) != "" {
		mode = ModeForwarder
	}
	t := &Topology{Tag: tag, Mode: mode, Seed: e.Seed, Bottlenecks: e.Bottlenecks, MaxPacketSize: e.Transport.MaxPacketSize,
		MPTCP: e.Transport.Kind == experiment.KindMPTCP && e.Transport.Multipath}
	for i, p := range e.Paths {
		c, s := e.Addrs(i)
		t.Paths = append(t.Paths, Path{Up: p.Up, Down: p.Down, RTT: p.RTT(), Client: c, Server: s, Changes: p.Changes,
			Bottleneck: p.Bottleneck, BottleneckDelay: p.BottleneckDelay})
	}
	return t, nil
}

// Namespace names.
func (t *Topology) Client() string { return t.Tag + "-client" }

// Server is the server's namespace.
func (t *Topology) Server() string { return t.Tag + "-server" }

// Router is the router's namespace (forwarder mode).
func (t *Topology) Router() string { return t.Tag + "-router" }

// Namespaces lists the topology's namespaces.
func (t *Topology) Namespaces() []string {
	ns := []string{t.Client(), t.Server()}
	if t.Mode == ModeForwarder {
		ns = append(ns, t.Router())
	}
	return ns
}

// Interface names: path i is "p<i>" in the client's and the server's
// namespaces, and "c<i>" (towards the client) and "s<i>" (towards the
// server) in the router's.
func endIf(i int) string    { return "p" + strconv.Itoa(i) }
func routerC(i int) string  { return "c" + strconv.Itoa(i) }
func routerS(i int) string  { return "s" + strconv.Itoa(i) }
func mac(i, end int) string { return fmt.Sprintf("02:6d:70:%02x:%02x:01", i, end) }

// MAC address ends.
const (
	macClient  = 1
	macServer  = 2
	macRouterC = 3
	macRouterS = 4
)

// Cmd is one command of a plan.
type Cmd struct {
	Args []string
	// Probe marks the netem probe, whose failure decides the mode.
	Probe bool
}

func (c Cmd) String() string { return shellJoin(c.Args) }

func cmd(args ...string) Cmd { return Cmd{Args: args} }

// UpPlan lists the commands that build the topology, in order. In
// forwarder mode the forwarder is started after them (see Up).
func (t *Topology) UpPlan() []Cmd {
	var p []Cmd
	for _, ns := range t.Namespaces() {
		p = append(p, cmd("ip", "netns", "add", ns))
	}
	v4 := true
	for _, path := range t.Paths {
		v4 = v4 && path.Client.Addr().Is4()
	}
	for _, ns := range t.Namespaces() {
		p = append(p, cmd("ip", "-n", ns, "link", "set", "lo", "up"))
		// No router advertisements, neighbour discovery or MLD on
		// IPv4 paths; no reverse path filter, as the server receives
		// for any of its addresses on every path.
		args := []string{"ip", "netns", "exec", ns, "sysctl", "-qw",
			"net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0"}
		if v4 {
			args = append(args, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
		}
		p = append(p, cmd(args...))
	}
	c, s, r := t.Client(), t.Server(), t.Router()
	for i, path := range t.Paths {
		ci, si := endIf(i), endIf(i)
		if t.Mode == ModeNetem {
			p = append(p, cmd("ip", "link", "add", ci, "address", mac(i, macClient), "netns", c,
				"type", "veth", "peer", "name", si, "address", mac(i, macServer), "netns", s))
		} else {
			p = append(p,
				cmd("ip", "link", "add", ci, "address", mac(i, macClient), "netns", c,
					"type", "veth", "peer", "name", routerC(i), "address", mac(i, macRouterC), "netns", r),
				cmd("ip", "link", "add", si, "address", mac(i, macServer), "netns", s,
					"type", "veth", "peer", "name", routerS(i), "address", mac(i, macRouterS), "netns", r))
		}
		// Segmentation offload off where packets enter a path: every
		// packet on a link is one frame of at most the MTU, as the link
		// model (and netem's rate) wants.
		p = append(p,
			cmd("ip", "-n", c, "link", "set", ci, "gso_max_segs", "1", "up"),
			cmd("ip", "-n", s, "link", "set", si, "gso_max_segs", "1", "up"),
			cmd("ip", "-n", c, "addr", "add", path.Client.String(), "dev", ci),
			cmd("ip", "-n", s, "addr", "add", path.Server.String(), "dev", si),
			cmd("ip", "-n", c, "neigh", "replace", path.Server.Addr().String(), "lladdr", mac(i, macServer), "dev", ci, "nud", "permanent"),
			cmd("ip", "-n", s, "neigh", "replace", path.Client.Addr().String(), "lladdr", mac(i, macClient), "dev", si, "nud", "permanent"),
			// Whatever the client sends from its address on path i
			// goes over path i.
			cmd("ip", "-n", c, "rule", "add", "from", path.Client.Addr().String(), "table", strconv.Itoa(100+i), "priority", strconv.Itoa(1000+i)),
			cmd("ip", "-n", c, "route", "add", "default", "via", path.Server.Addr().String(), "dev", ci, "table", strconv.Itoa(100+i)),
		)
		if t.Mode == ModeForwarder {
			p = append(p,
				cmd("ip", "-n", r, "link", "set", routerC(i), "gso_max_segs", "1", "up"),
				cmd("ip", "-n", r, "link", "set", routerS(i), "gso_max_segs", "1", "up"))
			continue
		}
		v6 := path.Client.Addr().Is6()
		p = append(p, netemCmd("add", c, ci, path.Up, path.RTT, t.MaxPacketSize, v6, false))
		p = append(p, netemCmd("add", s, si, path.Down, path.RTT, t.MaxPacketSize, v6, false))
	}
	return append(p, t.mptcpPlan()...)
}

// mptcpPlan configures the kernel's MPTCP path manager for a topology
// with MPTCP: both ends accept a subflow per path beyond the first, and
// the client's address on each of those paths is a subflow endpoint, so
// that the client opens a subflow from it (over that path, by the
// client's routing rules) to the server's address of the first.
func (t *Topology) mptcpPlan() []Cmd {
	n := len(t.Paths) - 1
	if !t.MPTCP || n < 1 {
		return nil
	}
	k := strconv.Itoa(min(n, 8))
	var p []Cmd
	for _, ns := range []string{t.Client(), t.Server()} {
		p = append(p, cmd("ip", "-n", ns, "mptcp", "limits", "set", "subflow", k, "add_addr_accepted", k))
	}
	for i, path := range t.Paths[1:] {
		p = append(p, cmd("ip", "-n", t.Client(), "mptcp", "endpoint", "add", path.Client.Addr().String(), "dev", endIf(i+1), "subflow"))
	}
	return p
}

// Ethernet, IPv4, IPv6 and UDP header bytes.
const (
	ethernetHeader = 14
	ipv4Header     = 20
	ipv6Header     = 40
	udpHeader      = 8
)

// FrameBytes is the Ethernet frame of a UDP datagram of payload bytes,
// what netem counts on a veth and the forwarder reads.
func FrameBytes(payload int, ipv6 bool) int {
	if ipv6 {
		return payload + udpHeader + ipv6Header + ethernetHeader
	}
	return payload + udpHeader + ipv4Header + ethernetHeader
}

// netemCmd is the tc command that adds (verb "add") or changes the netem
// qdisc that shapes the egress of dev in ns as link l of a path of
// round-trip propagation delay rtt, whose largest datagrams carry mps
// bytes of UDP payload over IPv6 if v6, else IPv4; down makes it lose
// every packet. One netem qdisc does what the link model does, in the
// model's order: it decides the loss first (a lost packet takes no queue
// space nor transmission time), then, with a rate, transmits each packet
// after the ones ahead of it and delivers it a delay later, which is the
// model's arrival time exactly (netem's time to send is the later of now
// + delay and the previous packet's, plus the packet's transmission
// time). The rate charges a datagram's UDP payload, as the simulator and
// the forwarder do: netem's packet overhead takes the Ethernet, IP and
// UDP headers (42 bytes over IPv4, 62 over IPv6) off the frame it counts.
// netem's jitter is uniform on [delay-jitter, delay+jitter), so the
// model's [Delay, Delay+Jitter) is netem's "delay Delay+Jitter/2
// Jitter/2"; with a rate netem keeps the packets in order as the model
// does (without one, "rate 100gbit" does that; a change restates it, as
// every option, to clear an earlier rate).
//
// The queue is where netem and the model differ: netem's limit counts
// the packets it holds, those waiting and in transmission (the model's
// queue) and those in the delay line, where the model's queue is in
// bytes. The limit is the queue in full-size datagrams plus the
// datagrams the rate fits in the mean delay (netemLimit): with full-size
// packets it drops when the model does, give or take a packet; smaller
// packets fill it with fewer bytes. A tbf child for the rate, with a queue
// in bytes, was used first: a token bucket lets a packet go when its
// bucket holds its bytes, at the start of its transmission time where the
// model delivers it at the end, so every packet of a busy period arrived
// one bucket (a frame) early, 5.4 ms at 2 Mbit/s (docs/results/validation.md,
// "Validation on real kernels").
func netemCmd(verb, ns, dev string, l experiment.Link, rtt time.Duration, mps int, v6, down bool) Cmd {
	args := []string{"tc", "-n", ns, "qdisc", verb, "dev", dev, "root", "handle", "1:", "netem",
		"limit", strconv.FormatInt(netemLimit(l, rtt, mps), 10)}
	delay := l.Delay + l.Jitter/2
	args = append(args, "delay", usec(delay))
	if l.Jitter > 0 {
		args = append(args, usec(l.Jitter/2))
	}
	switch {
	case down:
		args = append(args, "loss", "random", "100%")
	case l.Loss == 0:
	case l.LossModel == "gilbert":
		// Good->Bad p, Bad->Good r, loss 1-h in Bad, 1-k in Good.
		r := 1 / max(l.BurstLength, 1)
		p := l.Loss * r / (1 - l.Loss)
		args = append(args, "loss", "gemodel", pct(p), pct(r), "100%", "0%")
	default:
		args = append(args, "loss", "random", pct(l.Loss))
	}
	switch {
	case l.Rate > 0:
		args = append(args, "rate", strconv.FormatFloat(l.Rate, 'f', 0, 64)+"bit", strconv.Itoa(-FrameBytes(0, v6)))
	case l.Jitter > 0 || verb != "add":
		args = append(args, "rate", "100gbit")
	}
	return Cmd{Args: args}
}

// TimedCmd is a command to run At after the start of a run.
type TimedCmd struct {
	At  time.Duration
	Cmd Cmd
}

// ChangePlan lists, in the order of their times, the tc commands that
// apply the paths' scheduled changes ([[path.change]]) in netem mode: a
// tc qdisc change of the netem qdisc of each direction changed (every
// option restated, the rate too; a direction down loses every packet).
// Forwarder mode applies the changes in the link model instead.
func (t *Topology) ChangePlan() []TimedCmd {
	var out []TimedCmd
	for i, path := range t.Paths {
		ep := experiment.Path{Up: path.Up, Down: path.Down, Changes: path.Changes}
		up, down := ep.Steps()
		v6 := path.Client.Addr().Is6()
		for _, d := range []struct {
			ns    string
			steps []experiment.LinkStep
		}{{t.Client(), up}, {t.Server(), down}} {
			for _, st := range d.steps {
				out = append(out, TimedCmd{st.At, netemCmd("change", d.ns, endIf(i), st.Link, st.RTT, t.MaxPacketSize, v6, st.Down)})
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At < out[b].At })
	return out
}

// netemLimit is the netem limit (packets) of link l on a path of
// round-trip propagation delay rtt with datagrams of at most mps bytes of
// UDP payload (what the rate charges): the link's queue
// (experiment.Link.QueueLimit) in whole datagrams, at least one, plus the
// datagrams its rate fits in its mean delay (Delay + Jitter/2), rounded
// to the nearest; 1,000,000 at unlimited rate.
func netemLimit(l experiment.Link, rtt time.Duration, mps int) int64 {
	if l.Rate == 0 {
		return 1_000_000
	}
	queue := max(1, l.QueueLimit(rtt)/int64(mps))
	line := int64(math.Round(l.Rate / 8 * (l.Delay + l.Jitter/2).Seconds() / float64(mps)))
	return min(queue+line, math.MaxInt32)
}

func usec(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + "us" }

func pct(f float64) string { return strconv.FormatFloat(f*100, 'g', 6, 64) + "%" }

// NetemProbe is the command that tells whether the kernel has netem: it
// adds a netem qdisc to the client namespace's loopback (removed by
// NetemProbeUndo when it worked).
func (t *Topology) NetemProbe() Cmd {
	return Cmd{Args: []string{"tc", "-n", t.Client(), "qdisc", "add", "dev", "lo", "root", "netem", "delay", "0us"}, Probe: true}
}

// NetemProbeUndo removes the probe's qdisc.
func (t *Topology) NetemProbeUndo() Cmd {
	return cmd("tc", "-n", t.Client(), "qdisc", "del", "dev", "lo", "root")
}

// DownPlan lists the commands that remove the topology's namespaces
// (with them go their veths, qdiscs and routes). Processes and the state
// directory are Down's.
func DownPlan(tag string) []Cmd {
	var p []Cmd
	for _, end := range []string{"client", "router", "server"} {
		p = append(p, cmd("ip", "netns", "del", tag+"-"+end))
	}
	return p
}

// shellJoin quotes args for a shell where needed.
func shellJoin(args []string) string {
	out := ""
	for i, a := range args {
		if i > 0 {
			out += " "
		}
		if a == "" || regexp.MustCompile(`[^A-Za-z0-9_./:%=@,+-]`).MatchString(a) {
			a = strconv.Quote(a)
		}
		out += a
	}
	return out
}
