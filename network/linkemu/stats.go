package linkemu

import (
	"encoding/json"
	"os"
	"time"
)

// WriteStats writes the counters of every path as emulator.json (the
// loopback emulator's and the namespace forwarder's): a JSON array with,
// per path, "path" (its index) and "up" and "down", each direction's
// LinkStats with times in milliseconds; then per shared bottleneck the
// same with "bottleneck" (its name) instead of "path". It writes a temporary file and
// renames it, so that a reader never sees half of it.
func WriteStats(name string, stats []PathStats) error {
	type link struct {
		Sent            uint64  `json:"sent"`
		Delivered       uint64  `json:"delivered"`
		BytesSent       uint64  `json:"bytes_sent"`
		BytesDelivered  uint64  `json:"bytes_delivered"`
		DroppedLoss     uint64  `json:"dropped_loss"`
		DroppedQueue    uint64  `json:"dropped_queue"`
		DroppedOverflow uint64  `json:"dropped_overflow"`
		DroppedDown     uint64  `json:"dropped_down"`
		DroppedSocket   uint64  `json:"dropped_socket"`
		Unroutable      uint64  `json:"unroutable"`
		WriteErrors     uint64  `json:"write_errors"`
		Foreign         uint64  `json:"foreign"`
		InFlight        uint64  `json:"in_flight"`
		LateMeanMS      float64 `json:"late_mean_ms"`
		LateMaxMS       float64 `json:"late_max_ms"`
	}
	conv := func(s LinkStats) link {
		ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }
		return link{s.Sent, s.Delivered, s.BytesSent, s.BytesDelivered, s.DroppedLoss, s.DroppedQueue, s.DroppedOverflow,
			s.DroppedDown, s.DroppedSocket, s.Unroutable, s.WriteErrors, s.Foreign, s.InFlight, ms(s.LateMean), ms(s.LateMax)}
	}
	type path struct {
		ID         *int   `json:"path,omitempty"`
		Bottleneck string `json:"bottleneck,omitempty"`
		Up         link   `json:"up"`
		Down       link   `json:"down"`
	}
	out := make([]path, len(stats))
	for i, s := range stats {
		out[i] = path{Bottleneck: s.Bottleneck, Up: conv(s.Up), Down: conv(s.Down)}
		if s.Bottleneck == "" {
			out[i].ID = &i
		}
	}
	js, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, append(js, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
