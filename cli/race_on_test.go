//go:build race

package cli

// raceEnabled says the tests run under the race detector, which slows the
// real-socket endpoints several times over: wall-clock timing bounds are
// not checked then (the plain test run checks them).
const raceEnabled = true
