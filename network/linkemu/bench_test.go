package linkemu

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// BenchmarkForward measures what the emulator sustains on one path of
// this machine: a sender keeps up to window datagrams of 1350 bytes in
// flight through the up link to a receiver. It reports the delivered
// rate, datagrams lost anywhere (the emulator's drops and the kernel's),
// and how late the delivery goroutine sent datagrams on after their model
// arrival times (the driver's timing error). The "sparse" case sends one
// datagram per millisecond, so the lateness is the timers' alone.
//
//	go test ./network/linkemu -run '^$' -bench Forward -benchtime 100000x
func BenchmarkForward(b *testing.B) {
	tests := []struct {
		name   string
		link   experiment.Link
		window int
		gap    time.Duration
	}{
		{"unlimited", experiment.Link{}, 256, 0},
		{"100Mbit-10ms", experiment.Link{Rate: 100e6, Delay: 10 * time.Millisecond, QueueBytes: 4 << 20}, 256, 0},
		{"1Gbit-10ms", experiment.Link{Rate: 1e9, Delay: 10 * time.Millisecond, QueueBytes: 4 << 20}, 1024, 0},
		{"sparse-5ms", experiment.Link{Rate: 100e6, Delay: 5 * time.Millisecond}, 256, time.Millisecond},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			server := udp(b, "127.0.0.1:0")
			client := udp(b, "127.0.0.1:0")
			client.SetWriteBuffer(4 << 20)
			e, err := Start(Config{Paths: []experiment.Path{{Up: tt.link, Down: tt.link}}, Server: addrOf(server)})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			tokens := make(chan struct{}, tt.window)
			for range tt.window {
				tokens <- struct{}{}
			}
			stop := make(chan struct{})
			defer close(stop)
			payload := make([]byte, 1350)
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			go func() {
				var tick *time.Ticker
				if tt.gap > 0 {
					tick = time.NewTicker(tt.gap)
					defer tick.Stop()
				}
				for range b.N {
					select {
					case <-tokens:
					case <-stop:
						return
					}
					if tick != nil {
						<-tick.C
					}
					client.WriteToUDPAddrPort(payload, e.Front(0))
				}
			}()
			buf := make([]byte, 2048)
			got := 0
			start := time.Now()
			for got < b.N {
				server.SetReadDeadline(time.Now().Add(time.Second))
				if _, _, err := server.ReadFromUDPAddrPort(buf); err != nil {
					if errors.Is(err, os.ErrDeadlineExceeded) {
						break
					}
					b.Fatal(err)
				}
				got++
				select {
				case tokens <- struct{}{}:
				default:
				}
			}
			el := time.Since(start)
			b.StopTimer()
			s := e.Stats()[0].Up
			b.ReportMetric(float64(got)*float64(len(payload))*8/el.Seconds()/1e6, "Mbit/s")
			b.ReportMetric(float64(b.N-got), "lost")
			b.ReportMetric(float64(s.LateMean.Microseconds()), "late-mean-µs")
			b.ReportMetric(float64(s.LateMax.Microseconds()), "late-max-µs")
		})
	}
}
