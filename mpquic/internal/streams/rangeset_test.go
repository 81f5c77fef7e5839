package streams

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRangeSetAdd(t *testing.T) {
	tests := []struct {
		name       string
		init       rangeSet
		start, end uint64
		want       rangeSet
		added      uint64
	}{
		{"empty", nil, 5, 10, rangeSet{{5, 10}}, 5},
		{"empty range", rangeSet{{0, 3}}, 5, 5, rangeSet{{0, 3}}, 0},
		{"append", rangeSet{{0, 3}}, 5, 10, rangeSet{{0, 3}, {5, 10}}, 5},
		{"touch after", rangeSet{{0, 3}}, 3, 10, rangeSet{{0, 10}}, 7},
		{"touch before", rangeSet{{5, 10}}, 0, 5, rangeSet{{0, 10}}, 5},
		{"prepend", rangeSet{{5, 10}}, 0, 3, rangeSet{{0, 3}, {5, 10}}, 3},
		{"insert middle", rangeSet{{0, 2}, {8, 10}}, 4, 6, rangeSet{{0, 2}, {4, 6}, {8, 10}}, 2},
		{"duplicate", rangeSet{{0, 10}}, 2, 8, rangeSet{{0, 10}}, 0},
		{"overlap left", rangeSet{{5, 10}}, 2, 7, rangeSet{{2, 10}}, 3},
		{"overlap right", rangeSet{{5, 10}}, 7, 12, rangeSet{{5, 12}}, 2},
		{"cover several", rangeSet{{0, 2}, {4, 6}, {8, 10}, {20, 30}}, 1, 9, rangeSet{{0, 10}, {20, 30}}, 4},
		{"bridge", rangeSet{{0, 2}, {4, 6}}, 2, 4, rangeSet{{0, 6}}, 2},
		{"superset", rangeSet{{3, 4}, {6, 7}}, 0, 10, rangeSet{{0, 10}}, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := slices.Clone(tt.init)
			if got := s.add(tt.start, tt.end); got != tt.added {
				t.Errorf("add returned %d, want %d", got, tt.added)
			}
			if !slices.Equal(s, tt.want) {
				t.Errorf("set %v, want %v", s, tt.want)
			}
		})
	}
}

func TestRangeSetRemove(t *testing.T) {
	tests := []struct {
		name       string
		init       rangeSet
		start, end uint64
		want       rangeSet
		removed    uint64
	}{
		{"empty", nil, 5, 10, nil, 0},
		{"disjoint", rangeSet{{0, 3}}, 3, 10, rangeSet{{0, 3}}, 0},
		{"whole", rangeSet{{0, 3}, {5, 8}}, 0, 3, rangeSet{{5, 8}}, 3},
		{"split", rangeSet{{0, 10}}, 3, 5, rangeSet{{0, 3}, {5, 10}}, 2},
		{"trim left", rangeSet{{0, 10}}, 0, 5, rangeSet{{5, 10}}, 5},
		{"trim right", rangeSet{{0, 10}}, 5, 12, rangeSet{{0, 5}}, 5},
		{"several", rangeSet{{0, 2}, {4, 6}, {8, 10}}, 1, 9, rangeSet{{0, 1}, {9, 10}}, 4},
		{"all", rangeSet{{0, 2}, {4, 6}}, 0, 100, rangeSet{}, 4},
		{"empty range", rangeSet{{0, 2}}, 1, 1, rangeSet{{0, 2}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := slices.Clone(tt.init)
			if got := s.remove(tt.start, tt.end); got != tt.removed {
				t.Errorf("remove returned %d, want %d", got, tt.removed)
			}
			if len(s) != len(tt.want) || len(s) > 0 && !slices.Equal(s, tt.want) {
				t.Errorf("set %v, want %v", s, tt.want)
			}
		})
	}
}

// TestRangeSetModel checks random operations against a bitmap.
func TestRangeSetModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const size = 200
	var s rangeSet
	var bits [size]bool
	for i := range 20000 {
		a, b := uint64(rng.IntN(size)), uint64(rng.IntN(size))
		a, b = min(a, b), max(a, b)
		var want uint64
		add := rng.IntN(2) == 0
		for k := a; k < b; k++ {
			if bits[k] != add {
				want++
				bits[k] = add
			}
		}
		var got uint64
		if add {
			got = s.add(a, b)
		} else {
			got = s.remove(a, b)
		}
		if got != want {
			t.Fatalf("op %d (add %v [%d,%d)): changed %d, want %d", i, add, a, b, got, want)
		}
		// Canonical form: sorted, non-empty, non-adjacent spans matching
		// the bitmap.
		var model rangeSet
		for k := uint64(0); k < size; k++ {
			if bits[k] {
				if n := len(model); n > 0 && model[n-1].end == k {
					model[n-1].end++
				} else {
					model = append(model, span{k, k + 1})
				}
			}
		}
		if len(model) != len(s) || len(s) > 0 && !slices.Equal(model, s) {
			t.Fatalf("op %d: set %v, want %v", i, s, model)
		}
		if s.total() != model.total() {
			t.Fatalf("total %d, want %d", s.total(), model.total())
		}
		c, d := uint64(rng.IntN(size)), uint64(rng.IntN(size))
		c, d = min(c, d), max(c, d)
		all := true
		for k := c; k < d; k++ {
			all = all && bits[k]
		}
		if s.contains(c, d) != all {
			t.Fatalf("contains(%d, %d) = %v, want %v in %v", c, d, !all, all, s)
		}
	}
}
