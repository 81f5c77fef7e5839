package netsim

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// BenchmarkMachineProbe times a fixed single-threaded workload that owes
// nothing to this project's code (sorting a million random integers,
// half a million map updates, 300 MB of 2 MB copies), so that a report of
// the simulator's speed can say how fast the machine ran at that moment:
// on a shared machine the same build's speed-2x100 varies by a factor of
// 1.7 within an hour, and the probe moves with it, roughly (a
// correlation of about 0.5 over 30 pairs; docs/design/simulator.md, "Speed"). Its
// time is the reference to quote beside a speed, not a speed of ours:
//
//	go test ./network/netsim -run '^$' -bench MachineProbe -benchtime 3x
func BenchmarkMachineProbe(b *testing.B) {
	var sink uint64
	for b.Loop() {
		sink += machineProbe()
	}
	if sink == 0 {
		b.Fatal("the probe computed nothing")
	}
}

// machineProbe is BenchmarkMachineProbe's workload; it returns a value
// derived from all of it, so that none is optimised away.
func machineProbe() uint64 {
	r := rand.New(rand.NewPCG(1, 2))
	xs := make([]uint64, 1<<20)
	for i := range xs {
		xs[i] = r.Uint64()
	}
	slices.Sort(xs)
	m := make(map[uint64]uint32, 1<<18)
	for range 1 << 19 {
		m[xs[r.IntN(len(xs))]>>44]++
	}
	src, dst := make([]byte, 2<<20), make([]byte, 2<<20)
	src[len(src)-1] = 1
	for range 150 {
		copy(dst, src)
		src, dst = dst, src
	}
	return xs[len(xs)/2] ^ uint64(len(m)) ^ uint64(src[len(src)-1])
}
