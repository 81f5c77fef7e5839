package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mpq/mpq/experiment"
)

// BenchmarkRunSpeed runs experiments/speed-2x100.toml (a saturated bulk
// download over two 100 Mbit/s paths, 50 ms RTT) for 10 s of virtual time
// per iteration through the whole runner (traffic generator, observers,
// result files) and reports simulated seconds per wall-clock second
// (sim-s/s) and per second of the process's CPU time (sim-s/cpu-s), with
// the simulator's null packet protection (the default) and with AES-GCM:
//
//	go test ./runner -run '^$' -bench RunSpeed -benchtime 2x
func BenchmarkRunSpeed(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "experiments", "speed-2x100.toml"))
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		null bool
	}{{"null", true}, {"aes-gcm", false}} {
		b.Run(tt.name, func(b *testing.B) {
			o, _ := experiment.ParseOverride("duration=10s")
			es, err := experiment.Parse("speed-2x100.toml", data, []experiment.Override{o})
			if err != nil {
				b.Fatal(err)
			}
			e := es[0]
			e.Transport.SimNullProtection = tt.null
			cpu := cpuTime()
			for b.Loop() {
				if _, err := Run(context.Background(), &e, b.TempDir()); err != nil {
					b.Fatal(err)
				}
			}
			cpu = cpuTime() - cpu
			virtual := float64(b.N) * e.Duration.Seconds()
			b.ReportMetric(virtual/b.Elapsed().Seconds(), "sim-s/s")
			if cpu > 0 {
				b.ReportMetric(virtual/cpu.Seconds(), "sim-s/cpu-s")
			}
		})
	}
}
