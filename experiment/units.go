package experiment

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseRate parses a transmission rate in bits per second: a number with
// a unit of bit, kbit, Mbit, Gbit (also bps, kbps, Mbps, Gbps, and "/s"
// spellings); decimal prefixes. "0" or "unlimited" means no rate limit.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "0" || strings.EqualFold(t, "unlimited") {
		return 0, nil
	}
	num, unit := splitNumber(t)
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("bad rate %q (want e.g. \"100Mbit\")", s)
	}
	unit = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(unit), "/s"), "ps")
	mult := map[string]float64{"bit": 1, "b": 1, "kbit": 1e3, "kb": 1e3, "mbit": 1e6, "mb": 1e6, "gbit": 1e9, "gb": 1e9}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("bad rate unit in %q (want bit, kbit, Mbit or Gbit per second)", s)
	}
	if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("rate %q must be positive", s)
	}
	return v * mult, nil
}

// ParseSize parses a size in bytes: a plain number, or a number with B,
// kB, MB, GB (powers of 1000) or KiB, MiB, GiB (powers of 1024).
func ParseSize(s string) (int64, error) {
	num, unit := splitNumber(strings.TrimSpace(s))
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || num == "" {
		return 0, fmt.Errorf("bad size %q (want e.g. \"10kB\")", s)
	}
	mult, ok := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}[strings.ToLower(strings.TrimSpace(unit))]
	if !ok {
		return 0, fmt.Errorf("bad size unit in %q (want B, kB, MB, GB, KiB, MiB or GiB)", s)
	}
	b := v * mult
	if b < 0 || b > 1<<50 || math.IsNaN(b) {
		return 0, fmt.Errorf("size %q out of range", s)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(b), nil
}

// ParseDuration parses a Go duration ("50ms", "1.5s", "2m").
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("bad duration %q (want e.g. \"50ms\")", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// ParseFraction parses a probability: "0.05%" or a number in [0, 1].
func ParseFraction(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(t, "%")), 64)
	if err != nil {
		return 0, fmt.Errorf("bad fraction %q (want e.g. \"0.05%%\" or 0.0005)", s)
	}
	if pct {
		v /= 100
	}
	if v < 0 || v > 1 || math.IsNaN(v) {
		return 0, fmt.Errorf("fraction %q outside [0, 1]", s)
	}
	return v, nil
}

// splitNumber splits "12.5Mbit" into "12.5" and "Mbit".
func splitNumber(s string) (num, unit string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '-' || s[i] == '+' || s[i] == 'e' && i > 0 && i+1 < len(s) && (s[i+1] >= '0' && s[i+1] <= '9' || s[i+1] == '-')) {
		i++
	}
	return s[:i], s[i:]
}

// FormatRate formats bits per second with the largest fitting unit.
func FormatRate(bps float64) string {
	switch {
	case bps == 0:
		return "unlimited"
	case bps >= 1e9 && math.Mod(bps, 1e9) == 0:
		return fmt.Sprintf("%gGbit", bps/1e9)
	case bps >= 1e6:
		return fmt.Sprintf("%gMbit", bps/1e6)
	case bps >= 1e3:
		return fmt.Sprintf("%gkbit", bps/1e3)
	}
	return fmt.Sprintf("%gbit", bps)
}
