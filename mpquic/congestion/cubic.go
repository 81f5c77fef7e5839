package congestion

import (
	"math"
	"time"
)

func init() {
	Register("cubic", func(cfg Config) (Controller, error) { return NewCubic(cfg), nil })
}

// CUBIC's constants (RFC 9438 Section 4).
const (
	CubicBeta = 0.7 // beta_cubic: the window after a congestion event
	CubicC    = 0.4 // C: the cubic function's scale, segments per s^3
)

// cubicAlphaFriend is alpha_cubic, the Reno-friendly increase
// (RFC 9438 Section 4.3).
const cubicAlphaFriend = 3 * (1 - CubicBeta) / (1 + CubicBeta)

// Cubic is CUBIC (RFC 9438) for one path. In congestion avoidance the
// window follows W_cubic(t) = C*(t-K)^3 + W_max (Section 4.2), t the time
// since the first acknowledgement after the last reduction and K =
// cbrt((W_max - cwnd_epoch)/C), growing per acknowledged segment by
// (W_cubic(t+RTT) - cwnd)/cwnd, the target kept within [cwnd, 1.5 cwnd];
// where W_cubic(t) is below the Reno-friendly estimate W_est (Section 4.3:
// W_est grows by alpha_cubic = 3(1-beta)/(1+beta) segments per window, 1
// once it reaches W_max) the window is W_est. A congestion event sets
// W_max (reduced to cwnd*(1+beta)/2 by fast convergence, Section 4.7, when
// the window had not regained the previous W_max) and multiplies the window
// by beta = 0.7. The initial slow start is HyStart++ (RFC 9406, see hyStart)
// unless Config.SlowStart is SlowStartStandard. Later slow starts (after
// persistent congestion) are plain. Recovery periods and persistent
// congestion are RFC 9002's. Windows are in bytes; the cubic function's
// segments are datagrams of the maximum size.
type Cubic struct {
	mds           float64
	cwnd          float64 // bytes
	ssthresh      uint64
	minWindow     float64
	recoveryStart time.Time
	inRecovery    bool

	wMax       float64   // segments
	k          float64   // seconds
	epochStart time.Time // zero: no epoch yet
	wEst       float64   // segments
	// cwndPrior is the window before the last reduction (RFC 9438's
	// cwnd_prior), in segments; alphaRule is Config.CubicAlpha.
	cwndPrior float64
	alphaRule CubicAlphaRule

	hs hyStart

	// beta is the factor of a congestion event and alpha the
	// Reno-friendly increase: CubicBeta and cubicAlphaFriend unless
	// Config.LossReduction or EmulatedConnections change them.
	beta, alpha float64
	// checkLimited is Config.CwndLimited; limitedSince is when the
	// window last stopped being used (zero while it is), by which the
	// epoch moves on when growth resumes.
	checkLimited bool
	limitedSince time.Time
	rtoCollapse  bool // Config.RTOCollapse
	toTarget     bool // Config.CubicTarget
}

// NewCubic returns a CUBIC controller in its initial slow start, with
// HyStart++ unless cfg.SlowStart is SlowStartStandard.
func NewCubic(cfg Config) *Cubic {
	base := NewNewReno(cfg, false)
	c := &Cubic{mds: float64(base.mds), cwnd: float64(base.cwnd), ssthresh: math.MaxUint64, minWindow: float64(base.minWindow),
		hs: newHyStart(cfg.SlowStart != SlowStartStandard, cfg.Paced), beta: CubicBeta, alpha: cubicAlphaFriend,
		checkLimited: cfg.CwndLimited, rtoCollapse: cfg.RTOCollapse, alphaRule: cfg.CubicAlpha, toTarget: cfg.CubicTarget}
	if cfg.LossReduction > 0 || cfg.EmulatedConnections > 1 {
		beta := CubicBeta
		if cfg.LossReduction > 0 {
			beta = cfg.LossReduction
		}
		n := float64(max(cfg.EmulatedConnections, 1))
		c.beta = emulatedBackoff(cfg.EmulatedConnections, beta)
		c.alpha = 3 * n * n * (1 - c.beta) / (1 + c.beta)
	}
	return c
}

// cwndLimited reports whether the window was (nearly) used up, as
// NewReno's rule (Config.CwndLimited).
func (c *Cubic) cwndLimited(priorInFlight uint64) bool {
	f := float64(priorInFlight)
	if f >= c.cwnd {
		return true
	}
	if c.cwnd < float64(c.ssthresh) && f >= c.cwnd/2 {
		return true
	}
	return c.cwnd-f <= 3*c.mds
}

// OnPacketSent implements Controller.
func (c *Cubic) OnPacketSent(time.Time, int, uint64) {}

func (c *Cubic) inCongestionRecovery(sent time.Time) bool {
	return !c.recoveryStart.IsZero() && !sent.After(c.recoveryStart)
}

// wCubic is W_cubic(t) in segments (RFC 9438 Section 4.2, Figure 1).
func (c *Cubic) wCubic(t float64) float64 {
	d := t - c.k
	return CubicC*d*d*d + c.wMax
}

// OnAck implements Controller.
func (c *Cubic) OnAck(now time.Time, acked []AckedPacket, priorInFlight uint64, rtt RTT) {
	if c.checkLimited {
		if !c.cwndLimited(priorInFlight) {
			for _, p := range acked {
				if !c.inCongestionRecovery(p.TimeSent) {
					c.inRecovery = false
				}
			}
			if c.limitedSince.IsZero() {
				c.limitedSince = now
			}
			return
		}
		if !c.limitedSince.IsZero() {
			if !c.epochStart.IsZero() {
				c.epochStart = c.epochStart.Add(now.Sub(c.limitedSince))
			}
			c.limitedSince = time.Time{}
		}
	}
	var bytes float64
	newRound := false
	for _, p := range acked {
		if c.inCongestionRecovery(p.TimeSent) {
			continue
		}
		c.inRecovery = false
		bytes += float64(p.Size)
		if c.hs.endsRound(p.TimeSent) {
			newRound = true
		}
	}
	if bytes == 0 {
		return
	}
	if c.cwnd < float64(c.ssthresh) {
		c.slowStart(now, bytes, newRound, rtt.Latest)
		return
	}
	c.avoid(now, bytes, rtt)
}

// slowStart grows the window in slow start, HyStart++ deciding when to
// leave it (RFC 9406 Section 4.2).
func (c *Cubic) slowStart(now time.Time, bytes float64, newRound bool, latest time.Duration) {
	if !c.hs.on {
		c.cwnd += bytes
		return
	}
	inc, done := c.hs.onAck(now, bytes, c.mds, newRound, latest)
	if done {
		// RFC 9406 Section 4.2: after CSS_ROUNDS rounds of Conservative
		// Slow Start.
		c.ssthresh = uint64(c.cwnd)
		return
	}
	c.cwnd += inc
}

// avoid is RFC 9438 Sections 4.2 to 4.4 for bytes newly acknowledged.
// With Config.CubicTarget the window is set to the target instead.
func (c *Cubic) avoid(now time.Time, bytes float64, rtt RTT) {
	w := c.cwnd / c.mds
	if c.epochStart.IsZero() {
		c.epochStart = now
		if w < c.wMax {
			c.k = math.Cbrt((c.wMax - w) / CubicC)
		} else {
			c.k, c.wMax = 0, w
		}
		c.wEst = w
	}
	segs := bytes / c.mds
	alpha := c.alpha
	switch c.alphaRule {
	case CubicAlphaRFC9438:
		if c.wEst >= c.cwndPrior {
			alpha = 1
		}
	case CubicAlphaLinux:
	default:
		if c.wEst >= c.wMax {
			alpha = 1
		}
	}
	c.wEst += alpha * segs / w
	t := now.Sub(c.epochStart).Seconds()
	if c.toTarget {
		c.cwnd = max(c.wCubic(t+rtt.Min.Seconds()), c.wEst) * c.mds
		return
	}
	if c.wCubic(t) < c.wEst {
		c.cwnd = max(c.cwnd, c.wEst*c.mds)
		return
	}
	target := min(max(c.wCubic(t+rtt.Smoothed.Seconds()), w), 1.5*w)
	c.cwnd += (target - w) / w * segs * c.mds
}

// OnCongestionEvent implements Controller (RFC 9438 Sections 4.6, 4.7).
func (c *Cubic) OnCongestionEvent(now, sentTime time.Time) {
	if c.inCongestionRecovery(sentTime) {
		return
	}
	c.recoveryStart = now
	c.inRecovery = true
	c.hs.stop()
	w := c.cwnd / c.mds
	c.cwndPrior = w
	if w < c.wMax {
		c.wMax = w * (1 + c.beta) / 2
	} else {
		c.wMax = w
	}
	c.cwnd = max(c.cwnd*c.beta, c.minWindow)
	c.ssthresh = uint64(c.cwnd)
	c.epochStart = time.Time{}
}

// OnPersistentCongestion implements Controller.
func (c *Cubic) OnPersistentCongestion(time.Time) {
	c.cwnd = c.minWindow
	c.recoveryStart = time.Time{}
	c.inRecovery = false
	c.epochStart = time.Time{}
}

// OnProbeTimeout implements ProbeTimeoutReactor: with Config.RTOCollapse,
// MPQUIC's retransmission timeout from the RTOAfterPTOs-th consecutive
// probe timeout on (ssthresh half the window, the window its minimum, and
// CUBIC's state forgotten, as MPQUIC's Cubic.Reset).
func (c *Cubic) OnProbeTimeout(_ time.Time, consecutive int) {
	if !c.rtoCollapse || consecutive < RTOAfterPTOs {
		return
	}
	c.hs.stop()
	c.ssthresh = uint64(c.cwnd / 2)
	c.cwnd = c.minWindow
	c.recoveryStart = time.Time{}
	c.inRecovery = false
	c.epochStart = time.Time{}
	c.wMax, c.k, c.wEst = 0, 0, 0
	c.limitedSince = time.Time{}
}

// Window implements Controller.
func (c *Cubic) Window() uint64 { return uint64(c.cwnd) }

// SlowStartThreshold implements Controller.
func (c *Cubic) SlowStartThreshold() uint64 { return c.ssthresh }

// TraceHyStart makes c record HyStart++'s steps (HyStartTracer).
func (c *Cubic) TraceHyStart() { c.hs.trace = true }

// HyStartSteps appends the steps recorded since the last call to dst
// (HyStartTracer).
func (c *Cubic) HyStartSteps(dst []HyStartStep) []HyStartStep { return c.hs.take(dst) }

// State implements Controller; Conservative Slow Start is slow start.
func (c *Cubic) State() State {
	switch {
	case c.inRecovery:
		return Recovery
	case c.cwnd < float64(c.ssthresh):
		return SlowStart
	default:
		return CongestionAvoidance
	}
}
