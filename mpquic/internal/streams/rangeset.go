package streams

import "slices"

// span is the half-open byte range [start, end).
type span struct{ start, end uint64 }

// rangeSet is a set of byte offsets kept as sorted, disjoint, non-adjacent
// spans. It stays small in practice (one span per hole), so linear shifting
// on insert and delete is cheaper than any tree; the backing array is reused,
// so steady-state operation does not allocate.
type rangeSet []span

// firstEndAtLeast returns the index of the first span whose end is >= x.
func (s rangeSet) firstEndAtLeast(x uint64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m].end < x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// firstStartAbove returns the index of the first span whose start is > x.
func (s rangeSet) firstStartAbove(x uint64) int {
	lo, hi := 0, len(s)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s[m].start <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// add inserts [start, end) and returns how many bytes were not in the set
// before.
func (s *rangeSet) add(start, end uint64) uint64 {
	if start >= end {
		return 0
	}
	r := *s
	n := len(r)
	// Fast path: appending beyond the last span, the common case for both
	// acknowledgements and received data.
	if n == 0 || r[n-1].end < start {
		*s = append(r, span{start, end})
		return end - start
	}
	// Extending the last span (start within it or touching its end),
	// as in-order data and acknowledgements do: no other span is
	// concerned, since the spans before it end before its start.
	if last := &r[n-1]; start >= last.start {
		if end <= last.end {
			return 0
		}
		added := end - last.end
		last.end = end
		return added
	}
	// Spans i..j-1 overlap or touch [start, end).
	i := r.firstEndAtLeast(start)
	j := r.firstStartAbove(end)
	if i == j {
		*s = slices.Insert(r, i, span{start, end})
		return end - start
	}
	var covered uint64
	for k := i; k < j; k++ {
		covered += min(r[k].end, end) - max(r[k].start, start)
	}
	merged := span{min(start, r[i].start), max(end, r[j-1].end)}
	r[i] = merged
	*s = slices.Delete(r, i+1, j)
	return end - start - covered
}

// remove deletes [start, end) from the set and returns how many bytes were
// removed.
func (s *rangeSet) remove(start, end uint64) uint64 {
	if start >= end {
		return 0
	}
	r := *s
	// Spans i..j-1 overlap [start, end) (touching is not overlapping).
	i := r.firstEndAtLeast(start + 1)
	j := r.firstStartAbove(end - 1)
	if i >= j {
		return 0
	}
	var removed uint64
	for k := i; k < j; k++ {
		removed += min(r[k].end, end) - max(r[k].start, start)
	}
	var keep [2]span
	nk := 0
	if r[i].start < start {
		keep[nk] = span{r[i].start, start}
		nk++
	}
	if r[j-1].end > end {
		keep[nk] = span{end, r[j-1].end}
		nk++
	}
	*s = slices.Replace(r, i, j, keep[:nk]...)
	return removed
}

// contains reports whether every byte of [start, end) is in the set.
func (s rangeSet) contains(start, end uint64) bool {
	if start >= end {
		return true
	}
	i := s.firstEndAtLeast(start + 1)
	return i < len(s) && s[i].start <= start && s[i].end >= end
}

// popFront removes the first span.
func (s *rangeSet) popFront() {
	*s = slices.Delete(*s, 0, 1)
}

// total returns the number of bytes in the set.
func (s rangeSet) total() uint64 {
	var t uint64
	for _, sp := range s {
		t += sp.end - sp.start
	}
	return t
}
