// Package names checks a name against the names a registry knows (path
// and stream schedulers, congestion controllers, backends, source kinds)
// and words the problem, suggesting the known name a typo was meant to
// be.
package names

import (
	"fmt"
	"slices"
	"strings"
)

// Check returns the problem with name as a what ("path scheduler") among
// the known names, or "" when it is one of them.
func Check(what, name string, known []string) string {
	if slices.Contains(known, name) {
		return ""
	}
	return Unknown(what, name, known)
}

// Unknown says that name is not one of known, suggesting the closest
// known name when exactly one is close.
func Unknown(what, name string, known []string) string {
	msg := fmt.Sprintf("unknown %s %q (known: %s)", what, name, strings.Join(known, ", "))
	if s := Closest(name, known); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return msg
}

// Closest returns the known name that name begins, or that is within two
// edits of name, when exactly one such name exists; otherwise "".
func Closest(name string, known []string) string {
	var best string
	n := 0
	for _, k := range known {
		if name != "" && strings.HasPrefix(k, name) || editDistance(name, k) <= 2 {
			best = k
			n++
		}
	}
	if n == 1 {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
