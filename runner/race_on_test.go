//go:build race

package runner

// raceEnabled says the tests run under the race detector, several times
// slower: tests that only measure (long simulations of one goroutine
// per part) skip then; the plain test run runs them.
const raceEnabled = true
