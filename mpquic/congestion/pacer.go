package congestion

import (
	"math"
	"math/bits"
	"time"
)

// PacingGain is N of RFC 9002 Section 7.7: the pacer sends at N times
// cwnd/smoothed_rtt so that it does not itself limit the window's use.
const PacingGain = 1.25

// BurstPackets is how many datagrams the pacer lets leave back to back.
const BurstPackets = 10

// Pacer is a token bucket that spreads a window's packets over a round
// trip (RFC 9002 Section 7.7). Tokens are bytes; they accrue at the pacing
// rate up to a burst: BurstPackets datagrams, or, with a burst interval,
// what the rate carries in that interval if that is more.
type Pacer struct {
	mds      uint64
	interval time.Duration // the burst interval; 0: BurstPackets datagrams
	burst    uint64
	rate     uint64 // bytes per second; 0 until SetRate
	tokens   uint64
	last     time.Time
}

// NewPacer returns a pacer for datagrams of at most maxDatagramSize bytes
// whose bursts are BurstPackets datagrams, or what its rate carries in
// burstInterval if that is more (0 or less: BurstPackets datagrams). It
// starts with a burst of BurstPackets datagrams.
func NewPacer(maxDatagramSize int, burstInterval time.Duration) *Pacer {
	mds := uint64(maxDatagramSize)
	return &Pacer{mds: mds, interval: max(0, burstInterval), burst: BurstPackets * mds, tokens: BurstPackets * mds}
}

// SetRate sets the rate from the congestion window and smoothed RTT.
func (p *Pacer) SetRate(cwnd uint64, srtt time.Duration) {
	if srtt <= 0 {
		p.setRate(0)
		return
	}
	r := float64(cwnd) * PacingGain * float64(time.Second) / float64(srtt)
	if r > math.MaxUint64/2 {
		r = math.MaxUint64 / 2
	}
	p.setRate(uint64(r))
}

// SetBytesPerSecond sets the rate directly (a controller's own pacing
// rate, PacingRater); 0 lets a full burst go at any time.
func (p *Pacer) SetBytesPerSecond(rate uint64) { p.setRate(min(rate, math.MaxUint64/2)) }

// setRate sets the rate and the burst that goes with it.
func (p *Pacer) setRate(rate uint64) {
	p.rate = rate
	if p.interval == 0 {
		return
	}
	hi, lo := bits.Mul64(rate, uint64(p.interval))
	b := uint64(math.MaxUint64 / 2)
	if hi < uint64(time.Second) {
		b, _ = bits.Div64(hi, lo, uint64(time.Second))
	}
	p.burst = max(BurstPackets*p.mds, b)
	p.tokens = min(p.tokens, p.burst)
}

// refill adds the tokens accrued since the last update.
func (p *Pacer) refill(now time.Time) {
	if p.last.IsZero() || p.rate == 0 {
		p.last = now
		if p.rate == 0 {
			p.tokens = p.burst
		}
		return
	}
	if !now.After(p.last) {
		return
	}
	el := uint64(now.Sub(p.last))
	p.last = now
	if el >= uint64(time.Second) {
		p.tokens = p.burst
		return
	}
	hi, lo := bits.Mul64(el, p.rate)
	add, _ := bits.Div64(hi, lo, uint64(time.Second))
	p.tokens = min(p.burst, p.tokens+add)
}

// Budget is how many bytes may leave now.
func (p *Pacer) Budget(now time.Time) uint64 {
	p.refill(now)
	return p.tokens
}

// OnPacketSent spends the tokens of a sent packet.
func (p *Pacer) OnPacketSent(now time.Time, size int) {
	p.refill(now)
	if uint64(size) >= p.tokens {
		p.tokens = 0
	} else {
		p.tokens -= uint64(size)
	}
}

// NextSendTime is when a packet of size bytes may leave; now if it may
// already.
func (p *Pacer) NextSendTime(now time.Time, size int) time.Time {
	p.refill(now)
	need := uint64(size)
	if p.tokens >= need || p.rate == 0 {
		return now
	}
	missing := need - p.tokens
	hi, lo := bits.Mul64(missing, uint64(time.Second))
	if hi >= p.rate {
		return now.Add(time.Second)
	}
	d, rem := bits.Div64(hi, lo, p.rate)
	if rem > 0 {
		d++
	}
	return now.Add(time.Duration(d))
}
