package trafficgen_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
	"github.com/mpq/mpq/mpquic/core"
	"github.com/mpq/mpq/testbed/env"
	"github.com/mpq/mpq/testbed/env/simenv"
	"github.com/mpq/mpq/testbed/netsim"
	"github.com/mpq/mpq/trafficgen"
)

// lateTimers is an environment whose timers fire lag after their time, as
// a loaded real-time event loop's do.
type lateTimers struct {
	env.Env
	lag time.Duration
}

func (l lateTimers) AfterFunc(d time.Duration, f func()) func() bool {
	return l.Env.AfterFunc(d+l.lag, f)
}

// TestPeriodicWindow: a periodic source generates one message for every
// multiple of its interval in the experiment's window [t0, t0+duration),
// however the peers are stopped. The real-time backends stop them once
// the end has passed on the wall clock; then the message due at the end
// itself must not be generated, and the messages due before the end whose
// timers are late (a loaded event loop) must be. Here the peers are
// stopped after everything due at the end ran, as on those backends.
func TestPeriodicWindow(t *testing.T) {
	const duration, interval = time.Second, 50 * time.Millisecond
	for _, lag := range []time.Duration{0, 70 * time.Millisecond} {
		sim := netsim.New(1)
		topo, err := netsim.NewTopology(sim, []netsim.PathSpec{netsim.Symmetric(netsim.LinkConfig{Rate: 100e6, Delay: 10 * time.Millisecond})})
		if err != nil {
			t.Fatal(err)
		}
		ctls, stls, err := netsim.TLSConfigs(1, "window")
		if err != nil {
			t.Fatal(err)
		}
		saddr := netip.AddrPortFrom(topo.Server[0], 443)
		shost, err := simenv.New(topo.Net, simenv.Config{Addrs: []netip.AddrPort{saddr}, Server: &core.Config{TLS: stls}})
		if err != nil {
			t.Fatal(err)
		}
		chost, err := simenv.New(topo.Net, simenv.Config{Addrs: []netip.AddrPort{netip.AddrPortFrom(topo.Client[0], 4000)}, Client: &core.Config{TLS: ctls}})
		if err != nil {
			t.Fatal(err)
		}
		srcs := []experiment.Source{{Name: "s1", Kind: experiment.KindPeriodic, Interval: interval, Size: 1000}}
		t0 := sim.Now()
		rec := trafficgen.NewRecorder(trafficgen.RecorderConfig{Sources: srcs, Start: t0, Duration: duration, Interval: 100 * time.Millisecond})
		var peers []*trafficgen.Peer
		senv := lateTimers{shost, lag}
		if _, err := shost.Listen(saddr.String(), func(c env.Conn) {
			p := trafficgen.NewPeer(senv, c, rec, "server")
			p.Start(srcs, t0)
			peers = append(peers, p)
		}); err != nil {
			t.Fatal(err)
		}
		chost.Dial(saddr.String(), func(c env.Conn, err error) {
			if err != nil {
				t.Error(err)
				return
			}
			peers = append(peers, trafficgen.NewPeer(chost, c, rec, "client"))
		})
		end := t0.Add(duration)
		sim.RunUntil(end)
		for _, p := range peers {
			p.Stop()
		}
		sim.RunWhile(func() bool { return rec.Outstanding() > 0 }, end.Add(2*time.Second))
		rec.Finish()
		msgs := rec.Messages()
		if want := int(duration / interval); len(msgs) != want {
			t.Errorf("timers %v late: %d messages, want %d", lag, len(msgs), want)
		}
		for _, m := range msgs {
			if !m.Completed {
				t.Errorf("timers %v late: message %d %s", lag, m.Seq, m.Status())
			}
		}
		if n := len(msgs); n > 0 {
			t.Logf("timers %v late: %d messages, the last one created at %v", lag, n, msgs[n-1].Created.Sub(t0))
		}
	}
}
