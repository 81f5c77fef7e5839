package mpquic

import (
	"io"
	"os"
	"sync"

	"github.com/mpq/mpq/mpquic/core"
)

// Config configures connections; see core.Config for every field.
type Config = core.Config

// PathStats are the statistics of one path; see core.PathStats.
type PathStats = core.PathStats

// PathEvent is a change of a path's health; see core.PathEvent.
type PathEvent = core.PathEvent

var (
	keyLogOnce sync.Once
	keyLog     io.Writer
)

// withKeyLog returns cfg with the TLS key log of SSLKEYLOGFILE installed
// when the variable is set and the configuration has no key log writer, so
// that Wireshark can decrypt captures (NSS key log format).
func withKeyLog(cfg *Config) *Config {
	if cfg.TLS == nil || cfg.TLS.KeyLogWriter != nil {
		return cfg
	}
	keyLogOnce.Do(func() {
		name := os.Getenv("SSLKEYLOGFILE")
		if name == "" {
			return
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return
		}
		keyLog = &syncWriter{w: f}
	})
	if keyLog == nil {
		return cfg
	}
	n := *cfg
	n.TLS = cfg.TLS.Clone()
	n.TLS.KeyLogWriter = keyLog
	return &n
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
