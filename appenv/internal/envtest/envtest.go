// Package envtest checks real-socket environments (package udpenv, with
// any of its transports) with the echo application.
package envtest

import (
	"testing"
	"time"

	"github.com/mpq/mpq/appenv"
	"github.com/mpq/mpq/appenv/internal/echo"
)

// Env is an environment whose loop can be entered from a test.
type Env interface {
	appenv.Env
	Exec(f func())
}

// Echo serves echo on server at listen, runs the client's exchanges of
// sizes (messages on streams of their own, interval apart, all under
// way at once for small intervals) against it, and fails t for any
// exchange that failed. It returns the results.
func Echo(t *testing.T, client, server Env, listen string, sizes []int, interval time.Duration) []echo.Result {
	t.Helper()
	var addr string
	var err error
	server.Exec(func() {
		var l appenv.Listener
		l, err = echo.Serve(server, listen)
		if err == nil {
			addr = l.Addr()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		res []echo.Result
		err error
	}
	done := make(chan outcome, 1)
	cfg := echo.Config{Addr: addr, Sizes: sizes, Interval: interval, Timeout: 20 * time.Second}
	client.Exec(func() {
		echo.Run(client, cfg, func(r []echo.Result, err error) { done <- outcome{r, err} })
	})
	var o outcome
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("echo did not finish")
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	for i, r := range o.res {
		if r.Err != nil {
			t.Errorf("exchange %d: %v", i, r.Err)
		}
		if r.End < r.Start {
			t.Errorf("exchange %d: ended at %v before its start %v", i, r.End, r.Start)
		}
		t.Logf("exchange %d: %d bytes at %v in %v", i, r.Size, r.Start, r.End-r.Start)
	}
	return o.res
}
