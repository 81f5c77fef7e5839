// Package netns is the namespace testbed: a client and a server network
// namespace joined by one path per [[path]] of an experiment, each
// direction of a path with the experiment's rate, delay, jitter, loss and
// queue. It plans and runs the ip and tc commands that build the
// topology, takes it down, and reports what exists.
//
// Where the kernel has netem, a path is a veth pair between the client's
// and the server's namespaces, shaped on each end's egress by netem (loss,
// delay and jitter, which netem's rate keeps in order) with a tbf child
// (rate and a drop-tail queue in bytes). Where it does not (tc says
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
// on its own; the paths have no common hop).
func NeedsForwarder(e *experiment.Experiment) string {
	for _, p := range e.Paths {
		if p.Bottleneck != "" {
			return fmt.Sprintf("bottleneck %q is shared by paths, and netem shapes each path's veths on their own", p.Bottleneck)
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
	t := &Topology{Tag: tag, Mode: mode, Seed: e.Seed, Bottlenecks: e.Bottlenecks}
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
		p = append(p, netemCmds(c, ci, path.Up, path.RTT)...)
		p = append(p, netemCmds(s, si, path.Down, path.RTT)...)
	}
	return p
}

// netemCmds shapes the egress of dev in ns as link l of a path of
// round-trip propagation delay rtt: netem decides losses (before the
// queue, as the link model) and delays, then a tbf child serializes at
// the rate with a drop-tail queue of the link's bytes. netem's jitter is
// uniform on [delay-jitter, delay+jitter), so the model's [Delay,
// Delay+Jitter) is netem's "delay Delay+Jitter/2 Jitter/2"; netem's rate,
// set far above the link's, makes netem keep the packets in order as the
// model does. netem's own limit (packets, the whole delay line) is set
// so that it never drops: the queue is tbf's. Netem delays before the
// queue where the model delays after it, which for a constant delay
// gives the same drops and departures, shifted by the delay.
func netemCmds(ns, dev string, l experiment.Link, rtt time.Duration) []Cmd {
	out := []Cmd{netemCmd("add", ns, dev, l, false)}
	if l.Rate > 0 {
		out = append(out, tbfCmd("add", ns, dev, l, rtt))
	}
	return out
}

// netemCmd is the tc command that adds (verb "add") or changes the netem
// qdisc of dev as link l (see netemCmds); down makes it lose every packet.
func netemCmd(verb, ns, dev string, l experiment.Link, down bool) Cmd {
	args := []string{"tc", "-n", ns, "qdisc", verb, "dev", dev, "root", "handle", "1:", "netem",
		"limit", strconv.FormatInt(netemLimit(l), 10)}
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
	if l.Jitter > 0 || verb != "add" {
		// A change restates every option: netem's rate as well.
		args = append(args, "rate", "100gbit")
	}
	return Cmd{Args: args}
}

// tbfCmd is the tc command that adds (verb "add"), changes or deletes
// ("del") the tbf child of dev's netem, which serializes at l's rate.
func tbfCmd(verb, ns, dev string, l experiment.Link, rtt time.Duration) Cmd {
	args := []string{"tc", "-n", ns, "qdisc", verb, "dev", dev, "parent", "1:1", "handle", "10:"}
	if verb == "del" {
		return Cmd{Args: args}
	}
	return Cmd{Args: append(args, "tbf",
		"rate", strconv.FormatFloat(l.Rate, 'f', 0, 64)+"bit",
		"burst", strconv.Itoa(tbfBurst(l.Rate)),
		"limit", strconv.FormatInt(l.QueueLimit(rtt), 10))}
}

// TimedCmd is a command to run At after the start of a run.
type TimedCmd struct {
	At  time.Duration
	Cmd Cmd
}

// ChangePlan lists, in the order of their times, the tc commands that
// apply the paths' scheduled changes ([[path.change]]) in netem mode: a
// tc qdisc change of the netem qdisc of each direction changed (every
// option restated; a direction down loses every packet), and the change,
// addition or removal of its tbf when its rate changes. Forwarder mode
// applies the changes in the link model instead.
func (t *Topology) ChangePlan() []TimedCmd {
	var out []TimedCmd
	for i, path := range t.Paths {
		ep := experiment.Path{Up: path.Up, Down: path.Down, Changes: path.Changes}
		up, down := ep.Steps()
		for _, d := range []struct {
			ns    string
			base  experiment.Link
			steps []experiment.LinkStep
		}{{t.Client(), path.Up, up}, {t.Server(), path.Down, down}} {
			tbf := d.base.Rate > 0
			for _, st := range d.steps {
				out = append(out, TimedCmd{st.At, netemCmd("change", d.ns, endIf(i), st.Link, st.Down)})
				switch {
				case st.Link.Rate > 0 && tbf:
					out = append(out, TimedCmd{st.At, tbfCmd("change", d.ns, endIf(i), st.Link, st.RTT)})
				case st.Link.Rate > 0:
					out = append(out, TimedCmd{st.At, tbfCmd("add", d.ns, endIf(i), st.Link, st.RTT)})
				case tbf:
					out = append(out, TimedCmd{st.At, tbfCmd("del", d.ns, endIf(i), st.Link, st.RTT)})
				}
				tbf = st.Link.Rate > 0
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].At < out[b].At })
	return out
}

// tbfBurst is the bucket of a tbf of rate bits per second: one
// full-size frame, or 100 µs of the rate if that is more.
func tbfBurst(rate float64) int {
	return max(1600, int(math.Ceil(rate/8*100e-6)))
}

// netemLimit is a netem limit (packets) that never drops: twice the
// smallest packets the link's rate fits in its delay line, at least
// 10,000; 1,000,000 at unlimited rate.
func netemLimit(l experiment.Link) int64 {
	if l.Rate == 0 {
		return 1_000_000
	}
	n := int64(math.Ceil(l.Rate / 8 * (l.Delay + l.Jitter).Seconds() / 64))
	return min(max(10_000, 2*n), math.MaxInt32)
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
