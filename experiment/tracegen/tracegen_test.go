package tracegen

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/mpq/mpq/experiment"
)

// By hand: 6 Mbit/s is 750 bytes a millisecond, a 1500-byte opportunity
// every second millisecond; 12 Mbit/s one every millisecond.
func TestOpportunities(t *testing.T) {
	if got := Opportunities(Constant(6e6), 4*time.Millisecond); !reflect.DeepEqual(got, []int64{2, 4}) {
		t.Errorf("6 Mbit/s: %v", got)
	}
	if got := Opportunities(Constant(12e6), 3*time.Millisecond); !reflect.DeepEqual(got, []int64{1, 2, 3}) {
		t.Errorf("12 Mbit/s: %v", got)
	}
	// 24 Mbit/s: two opportunities at each millisecond.
	if got := Opportunities(Constant(24e6), 2*time.Millisecond); !reflect.DeepEqual(got, []int64{1, 1, 2, 2}) {
		t.Errorf("24 Mbit/s: %v", got)
	}
	// Too slow for one packet: the period's opportunity alone.
	if got := Opportunities(Constant(1e3), 5*time.Millisecond); !reflect.DeepEqual(got, []int64{5}) {
		t.Errorf("1 kbit/s: %v", got)
	}
	// A ramp's mean: from 0 to 24 Mbit/s over 1 s, 12 Mbit/s on average.
	tr := experiment.Trace{MS: Opportunities(Ramp(0, 24e6, time.Second), time.Second)}
	if r := tr.MeanRate(); r < 11.9e6 || r > 12.1e6 {
		t.Errorf("ramp mean %v", r)
	}
	w := Walk(1, 12e6, 2e6, 40e6, 0.25, 200*time.Millisecond, 20*time.Second)
	for at := time.Duration(0); at < 20*time.Second; at += 100 * time.Millisecond {
		if r := w(at); r < 2e6 || r > 40e6 {
			t.Fatalf("walk at %v: %v outside its bounds", at, r)
		}
	}
}

// The traces of experiments/traces are the generator's output, and parse.
func TestFilesCommitted(t *testing.T) {
	for _, f := range Files() {
		name := filepath.Join("..", "..", "experiments", "traces", f.Name)
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		if err := Write(&want, f.MS); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, want.Bytes()) {
			t.Errorf("%s differs from the generator's output: go run ./experiment/tracegen/gen experiments/traces", name)
		}
		tr, err := experiment.ParseTrace(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: period %v, mean %.2f Mbit/s", f.Name, tr.Period(), tr.MeanRate()/1e6)
	}
}
