// Package congestion holds the congestion controllers of mpquic and its
// pacer. Every path of a connection has a Controller of its own, chosen by
// name:
//
//   - newreno (RFC 9002 Section 7; the default, as in the multipath QUIC of
//     De Coninck and Bonaventure that the reference experiments used) and
//     newreno-cwl (with RFC 9002 Section 7.8) and newreno-cwl-ss (that
//     rule in the initial slow start only; ours);
//   - cubic (RFC 9438, with HyStart++ of RFC 9406 in slow start);
//   - bbr (BBRv1 as published by Cardwell et al.), which sets its own
//     pacing rate (PacingRater);
//   - the coupled lia (RFC 6356), olia (Khalili et al., IEEE/ACM ToN 2013)
//     and balia (Peng et al., IEEE/ACM ToN 2016), whose increase looks at
//     every path of the connection through the Group the connection passes
//     in Config.
//
// Config.SlowStart gives the newreno family and the coupled controllers
// HyStart++ too (cubic's, in hystart.go), or cubic the standard slow
// start.
//
// Controllers are clock-free: every method takes the current time.
package congestion

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// State is the phase of a controller, named as in qlog's
// congestion_state_updated event.
type State uint8

// Controller states.
const (
	SlowStart State = iota
	CongestionAvoidance
	Recovery
	ApplicationLimited
)

// String returns the qlog name of the state.
func (s State) String() string {
	switch s {
	case SlowStart:
		return "slow_start"
	case CongestionAvoidance:
		return "congestion_avoidance"
	case Recovery:
		return "recovery"
	case ApplicationLimited:
		return "application_limited"
	case BBRStartup:
		return "startup"
	case BBRDrain:
		return "drain"
	case BBRProbeBW:
		return "probe_bw"
	case BBRProbeRTT:
		return "probe_rtt"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// AckedPacket is a newly acknowledged in-flight packet.
type AckedPacket struct {
	Number   uint64
	TimeSent time.Time
	Size     int
}

// RTT is the path's RTT estimate when an ACK is processed.
type RTT struct {
	Latest, Smoothed, Var, Min time.Duration
}

// Config parameterises a controller.
type Config struct {
	// MaxDatagramSize is the sender's maximum datagram size in bytes
	// (RFC 9002 Section 7.2). Required.
	MaxDatagramSize int
	// InitialWindowPackets overrides the initial window, in datagrams.
	// Zero selects RFC 9002's min(10*mds, max(14720, 2*mds)).
	InitialWindowPackets int
	// Group is the connection's set of path controllers: coupled
	// controllers join it and read the other paths' windows and RTTs
	// through it. The connection makes one and passes it to every path's
	// controller, and calls Group.Leave when a path is dropped. Nil gives
	// the controller a group of its own (one path).
	Group *Group
	// RenoGrowth is how newreno, newreno-cwl and newreno-cwl-ss grow the window in
	// congestion avoidance (GrowthPerAck by default); other controllers
	// refuse anything but the default.
	RenoGrowth Growth
	// SlowStart is how the controller leaves its initial slow start;
	// empty selects DefaultSlowStart of the controller (HyStart++ for
	// cubic, standard for the others). bbr refuses any.
	SlowStart SlowStartMode
	// Paced says the path's packets go through a pacer (RFC 9002
	// Section 7.7). HyStart++ then applies every acknowledged byte to the
	// window, L = infinity (RFC 9406 Section 4.3: "A paced TCP
	// implementation SHOULD use L = infinity"), instead of at most 8
	// datagrams per ACK frame.
	Paced bool

	// The readings of another implementation (MPQUIC's, after Chromium's
	// QUIC), each off in the zero value, where the controllers otherwise
	// follow their published algorithm. bbr refuses all four.

	// EmulatedConnections is N, the number of TCP connections the
	// controller emulates (0 and 1: one). A congestion event multiplies
	// the window by (N-1+β)/N instead of β (LossReduction); newreno's
	// congestion avoidance grows by N datagrams per window of
	// acknowledged bytes (or per round trip with GrowthPerRTT); cubic's
	// Reno-friendly estimate grows by 3N²(1-b)/(1+b) segments per window,
	// b = (N-1+β)/N, and its fast convergence uses b. lia, olia and balia
	// change their reduction only (balia's β is its own reduction of that
	// event): the coupled increase is the coupling's. MPQUIC emulates 2.
	EmulatedConnections int
	// LossReduction is β, the factor a congestion event multiplies the
	// window by (before EmulatedConnections); 0 for the controller's own:
	// 0.5 for newreno, lia and olia (RFC 9002's kLossReductionFactor,
	// RFC 6356), 0.7 for cubic (RFC 9438's beta_cubic). MPQUIC's Reno and
	// OLIA take Chromium's 0.7. balia refuses it (its reduction is
	// BALIA's own).
	LossReduction float64
	// CwndLimited lets the window grow only while the path uses it
	// (RFC 9002 Section 7.8, as newreno-cwl does; Linux's
	// tcp_is_cwnd_limited, Chromium's and MPQUIC's senders): bytes in
	// flight before the acknowledgement at least the window, or above
	// half of it in slow start, or within three datagrams of it. cubic's
	// epoch is moved on by the time it did not grow, as Chromium's CUBIC
	// does, so that W_cubic does not run ahead meanwhile.
	CwndLimited bool
	// RTOCollapse reacts to a path's retransmission timeout as MPQUIC
	// does (after two tail-loss probes, an RTO sets ssthresh to half the
	// window and the window to its minimum, two datagrams): at the
	// RTOAfterPTOs-th consecutive probe timeout of the path and at each
	// one after it (ProbeTimeoutReactor). Without it a probe timeout is
	// no congestion signal (RFC 9002 Section 6.2: only persistent
	// congestion collapses the window).
	RTOCollapse bool
	// CubicAlpha is when cubic's Reno-friendly estimate W_est stops
	// growing by alpha_cubic and grows by 1 segment per window, like
	// Reno (RFC 9438 Section 4.3): CubicAlphaWMax (""), CubicAlphaRFC9438
	// or CubicAlphaLinux. Only cubic takes it.
	CubicAlpha CubicAlphaRule
	// CubicTarget sets cubic's window in congestion avoidance to its
	// target at each acknowledgement, max(W_cubic(t + min_rtt), W_est),
	// as MPQUIC's CUBIC (Chromium's of 2017) does, instead of growing it
	// by (W_cubic(t + RTT) - cwnd)/cwnd per acknowledged segment with the
	// target capped at 1.5 cwnd (RFC 9438 Section 4.2): the window
	// reaches the cubic curve at once, about one round trip ahead. Only
	// cubic takes it.
	CubicTarget bool
	// OLIABestOverflow decides OLIA's presumably best paths as MPQUIC's
	// OLIA does: comparing ell_p*srtt_q^2 with ell_q*srtt_p^2 in int64
	// bytes times nanoseconds squared, products that wrap past 2^63 at
	// the byte counts and RTTs of most paths, so that the set is about
	// arbitrary (mpquicOLIABest). Only olia takes it.
	OLIABestOverflow bool
}

// CubicAlphaRule is a reading of when cubic's Reno-friendly increase
// becomes Reno's (Config.CubicAlpha).
type CubicAlphaRule string

// The readings of CubicAlphaRule.
const (
	// CubicAlphaWMax (the default; ours): once W_est reaches W_max,
	// which fast convergence lowers below the window before the last
	// reduction when the window had not regained the W_max before it
	// (the reading of the rfc8312bis draft before its authors corrected
	// it).
	CubicAlphaWMax CubicAlphaRule = ""
	// CubicAlphaRFC9438: once W_est reaches cwnd_prior, the window
	// before the last reduction (RFC 9438 Section 4.3).
	CubicAlphaRFC9438 CubicAlphaRule = "rfc9438"
	// CubicAlphaLinux: never; alpha_cubic always (RFC 8312, Linux's
	// tcp_cubic: bictcp_update's tcp_friendliness as we read it).
	CubicAlphaLinux CubicAlphaRule = "linux"
)

// CubicAlphaRules names the readings of CubicAlphaRule as the
// experiment file's transport.cubic_alpha takes them ("wmax" for
// CubicAlphaWMax).
func CubicAlphaRules() []string {
	return []string{"wmax", string(CubicAlphaRFC9438), string(CubicAlphaLinux)}
}

// Readings are the fields of Config that follow another implementation
// (MPQUIC's) instead of the published algorithms, as a connection's
// configuration carries them for all its paths; the zero value is the
// published algorithms.
type Readings struct {
	// InitialWindow is Config.InitialWindowPackets: the initial window
	// in datagrams (0: RFC 9002's; MPQUIC's is 32).
	InitialWindow       int
	EmulatedConnections int
	LossReduction       float64
	CwndLimited         bool
	RTOCollapse         bool
	CubicAlpha          CubicAlphaRule
	CubicTarget         bool
	OLIABestOverflow    bool
}

// IsZero reports whether r is the published algorithms.
func (r Readings) IsZero() bool { return r == Readings{} }

// RTOAfterPTOs is the consecutive probe timeout of a path that
// Config.RTOCollapse takes for MPQUIC's retransmission timeout, which
// follows two tail-loss probes.
const RTOAfterPTOs = 3

// ProbeTimeoutReactor is implemented by controllers that react to a
// path's probe timeouts (Config.RTOCollapse): the connection calls
// OnProbeTimeout when a probe timeout of the path's application data
// expires, consecutive counting the path's probe timeouts since its last
// acknowledgement, this one included.
type ProbeTimeoutReactor interface {
	OnProbeTimeout(now time.Time, consecutive int)
}

// AppLimitedObserver is implemented by controllers that tell rate
// samples taken while the sender was application limited from the others
// (bbr). The connection calls OnAppLimited, with the path's bytes in
// flight, when the path's window and pacer would have let it send a
// full-size packet and nothing was sent on it because the connection had
// no stream data to send (data the peer's flow control holds back does
// not count as none), or because the path scheduler keeps the path idle
// by a rule (scheduler.IdleKeeper); not when the scheduler holds data off
// a path it finds full.
type AppLimitedObserver interface {
	OnAppLimited(inFlight uint64)
}

// emulatedBackoff is (N-1+beta)/N for n connections (1 when n < 1).
func emulatedBackoff(n int, beta float64) float64 {
	if n <= 1 {
		return beta
	}
	return (float64(n) - 1 + beta) / float64(n)
}

// Growth is the congestion avoidance increase rule of NewReno.
type Growth string

// NewReno's growth rules.
const (
	// GrowthPerAck (default, "per-ack"): every acknowledged byte counts
	// towards the next increase of one datagram per window of
	// acknowledged bytes (RFC 9002 Section 7.3.3 with byte counting), so
	// the window grows in proportion to the data the path carries.
	GrowthPerAck Growth = "per-ack"
	// GrowthPerRTT ("per-rtt"): one datagram per round trip in which
	// anything was acknowledged, however much of the window was used.
	GrowthPerRTT Growth = "per-rtt"
)

// Growths lists the growth rules' names.
func Growths() []string { return []string{string(GrowthPerAck), string(GrowthPerRTT)} }

// PacingRater is implemented by controllers that choose their path's
// pacing rate themselves (bbr): the connection then paces the path at that
// rate whether pacing is enabled or not.
type PacingRater interface {
	// PacingRate is the rate in bytes per second; 0 while unknown (the
	// pacer then lets a full burst go).
	PacingRate() uint64
}

// Controller is a congestion controller of one path.
type Controller interface {
	// OnPacketSent records an in-flight packet of size bytes; inFlight is
	// bytes_in_flight including it.
	OnPacketSent(now time.Time, size int, inFlight uint64)
	// OnAck processes the in-flight packets newly acknowledged by one ACK
	// frame, in increasing packet number order. priorInFlight is
	// bytes_in_flight before they were removed.
	OnAck(now time.Time, acked []AckedPacket, priorInFlight uint64, rtt RTT)
	// OnCongestionEvent signals a loss (or ECN-CE); sentTime is the send
	// time of the most recent lost packet, which decides whether a new
	// recovery period starts (RFC 9002 Section 7.3.2).
	OnCongestionEvent(now, sentTime time.Time)
	// OnPersistentCongestion collapses the window (RFC 9002 Section 7.6.2).
	OnPersistentCongestion(now time.Time)
	// Window is the congestion window in bytes.
	Window() uint64
	// SlowStartThreshold is ssthresh in bytes (math.MaxUint64 until the
	// first congestion event).
	SlowStartThreshold() uint64
	// State is the current phase.
	State() State
}

// Factory builds a controller.
type Factory func(Config) (Controller, error)

var (
	mu        sync.RWMutex
	factories = map[string]Factory{}
)

// Register makes a controller available under name.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	factories[name] = f
}

// Names lists the registered controllers, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(factories))
	for k := range factories {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// New builds the controller registered under name.
func New(name string, cfg Config) (Controller, error) {
	mu.RLock()
	f, ok := factories[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown congestion controller %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	if cfg.MaxDatagramSize <= 0 {
		return nil, fmt.Errorf("congestion: MaxDatagramSize %d must be positive", cfg.MaxDatagramSize)
	}
	switch cfg.RenoGrowth {
	case "":
		cfg.RenoGrowth = GrowthPerAck
	case GrowthPerAck:
	case GrowthPerRTT:
		if !IsNewReno(name) {
			return nil, fmt.Errorf("congestion: growth %q applies to newreno, newreno-cwl and newreno-cwl-ss, not %q", cfg.RenoGrowth, name)
		}
	default:
		return nil, fmt.Errorf("congestion: unknown NewReno growth %q (known: %s)", cfg.RenoGrowth, strings.Join(Growths(), ", "))
	}
	if err := checkReadings(name, cfg); err != nil {
		return nil, err
	}
	ss, err := checkSlowStart(name, cfg.SlowStart)
	if err != nil {
		return nil, err
	}
	cfg.SlowStart = ss
	if cfg.Group == nil {
		cfg.Group = NewGroup()
	}
	return f(cfg)
}

// checkReadings checks the readings of cfg (EmulatedConnections,
// LossReduction, CwndLimited, RTOCollapse, CubicAlpha, CubicTarget,
// OLIABestOverflow, InitialWindowPackets) for the
// controller name.
func checkReadings(name string, cfg Config) error {
	if cfg.InitialWindowPackets < 0 {
		return fmt.Errorf("congestion: initial window %d packets is negative", cfg.InitialWindowPackets)
	}
	if cfg.EmulatedConnections < 0 {
		return fmt.Errorf("congestion: %d emulated connections is negative", cfg.EmulatedConnections)
	}
	if cfg.LossReduction != 0 && (cfg.LossReduction <= 0 || cfg.LossReduction >= 1) {
		return fmt.Errorf("congestion: loss reduction %g outside (0, 1)", cfg.LossReduction)
	}
	if name == "bbr" && (cfg.EmulatedConnections > 1 || cfg.LossReduction != 0 || cfg.CwndLimited || cfg.RTOCollapse) {
		return fmt.Errorf("congestion: bbr takes none of the loss-based readings (emulated connections, loss reduction, cwnd-limited growth, RTO collapse)")
	}
	switch cfg.CubicAlpha {
	case CubicAlphaWMax:
	case CubicAlphaRFC9438, CubicAlphaLinux:
		if name != "cubic" {
			return fmt.Errorf("congestion: the Reno-friendly alpha reading %q applies to cubic, not %q", cfg.CubicAlpha, name)
		}
	default:
		return fmt.Errorf("congestion: unknown cubic alpha reading %q (known: %s)", cfg.CubicAlpha, strings.Join(CubicAlphaRules(), ", "))
	}
	if cfg.CubicTarget && name != "cubic" {
		return fmt.Errorf("congestion: the window set to the cubic target applies to cubic, not %q", name)
	}
	if cfg.OLIABestOverflow && name != "olia" {
		return fmt.Errorf("congestion: MPQUIC's best-path test applies to olia, not %q", name)
	}
	if name == "balia" && cfg.LossReduction != 0 {
		return fmt.Errorf("congestion: balia's reduction is its own; it takes no loss reduction")
	}
	return nil
}
