package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The helper serves, on its one connection, the host's clock, a module
// proxy's files and a share the nodes put files into and get them from;
// names that would leave the share are refused; it returns once the
// node closes the connection.
func TestServe(t *testing.T) {
	proxy, share := t.TempDir(), t.TempDir()
	mod := filepath.Join(proxy, "golang.org", "toolchain", "@v")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mod, "list"), []byte("v0.0.1-go1.26.0.linux-amd64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	node, host := net.Pipe()
	done := make(chan error, 1)
	go func() { done <- serve(host, host, proxy, share) }()
	dialed := false
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if dialed {
				t.Error("a second connection")
			}
			dialed = true
			return node, nil
		}}}
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, "http://10.0.2.100"+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	before := time.Now().UnixNano()
	code, body := do("GET", "/time", "")
	ns, err := strconv.ParseInt(strings.TrimSpace(body), 10, 64)
	if code != 200 || err != nil || ns < before || ns > time.Now().UnixNano() {
		t.Errorf("GET /time: %d %q", code, body)
	}
	if code, body := do("GET", "/mod/golang.org/toolchain/@v/list", ""); code != 200 || body != "v0.0.1-go1.26.0.linux-amd64\n" {
		t.Errorf("GET the proxy's list: %d %q", code, body)
	}
	if code, _ := do("PUT", "/share/server-results.tgz", "halves"); code != http.StatusCreated {
		t.Errorf("PUT: %d", code)
	}
	if b, err := os.ReadFile(filepath.Join(share, "server-results.tgz")); err != nil || string(b) != "halves" {
		t.Errorf("the share holds %q, %v", b, err)
	}
	if code, body := do("GET", "/share/server-results.tgz", ""); code != 200 || body != "halves" {
		t.Errorf("GET the shared file: %d %q", code, body)
	}
	for _, bad := range []string{"/share/.hidden", "/share/..%2fescape"} {
		if code, _ := do("PUT", bad, "x"); code < 400 {
			t.Errorf("PUT %s: %d", bad, code)
		}
	}
	if code, _ := do("GET", "/share/missing", ""); code != http.StatusNotFound {
		t.Errorf("GET a missing file: %d", code)
	}
	client.CloseIdleConnections()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("serve did not return after the connection closed")
	}
}
