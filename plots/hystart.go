package plots

import (
	"encoding/json"
	"math"
	"strconv"
)

// hyStartEvent is what the hystart table reads of a qlog event: the
// HyStart++ steps mpquic logs as quic:recovery_metrics_updated with
// hystart_* extension fields, and quic:congestion_state_updated.
type hyStartEvent struct {
	Time float64 `json:"time"`
	Name string  `json:"name"`
	Data struct {
		PathID      uint64   `json:"path_id"`
		Cwnd        *float64 `json:"congestion_window"`
		Step        string   `json:"hystart_step"`
		RoundMinRTT *float64 `json:"hystart_round_min_rtt"`
		Samples     *float64 `json:"hystart_round_samples"`
		Threshold   *float64 `json:"hystart_threshold"`
		CSS         *bool    `json:"hystart_css"`
		Old         string   `json:"old"`
		New         string   `json:"new"`
	} `json:"data"`
}

// HyStartTable lists, for one run, the HyStart++ (RFC 9406) steps of one
// connection end's controllers (the bulk data's sender unless --vantage
// says otherwise; the run needs output.qlog) and its controllers' state
// changes, in time order within --from/--to: each round's end with the
// round's minimum RTT, its number of RTT samples and the minimum RTT at
// which the next round enters Conservative Slow Start; entering and
// leaving CSS; HyStart++'s exit after CSS's last round; and every
// quic:congestion_state_updated (the first "recovery" is the loss that
// ends HyStart++ if it has not ended by then). cwnd_kB is the window
// after the ACK frame of the step, and for a state change the window
// before it (the path's last in the trace before the change), in kB of
// 1000 bytes.
func HyStartTable(points []*Point, o Options) (*Table, error) {
	r, end, err := oneRunEnd(points, "hystart", o)
	if err != nil {
		return nil, err
	}
	name, err := traceOf(r, end, "the hystart table needs its HyStart++ steps")
	if err != nil {
		return nil, err
	}
	events, err := readHyStart(name)
	if err != nil {
		return nil, err
	}
	from, to := o.window(math.Inf(1))
	header := []string{"time_s", "path", "event", "round_min_rtt_ms", "samples", "threshold_ms", "cwnd_kB", "css"}
	t := &Table{MD: [][]string{header}, CSV: [][]string{header}}
	steps := 0
	cwnd := map[uint64]*float64{} // each path's last window
	for _, e := range events {
		d := &e.Data
		if e.Name == "quic:recovery_metrics_updated" && d.Cwnd != nil {
			cwnd[d.PathID] = d.Cwnd
		}
		if e.Time < from || e.Time > to || e.Name == "quic:recovery_metrics_updated" && d.Step == "" {
			continue
		}
		row := []string{strconv.FormatFloat(e.Time/1000, 'f', 3, 64), strconv.FormatUint(d.PathID, 10)}
		if e.Name == "quic:congestion_state_updated" {
			row = append(row, "state "+d.Old+" -> "+d.New, "", "", "", optNumber(kB(cwnd[d.PathID]), 1), "")
		} else {
			steps++
			row = append(row, d.Step, optNumber(d.RoundMinRTT, 2), optNumber(d.Samples, 0), optNumber(d.Threshold, 2),
				optNumber(kB(d.Cwnd), 1), strconv.FormatBool(d.CSS != nil && *d.CSS))
		}
		t.MD = append(t.MD, row)
		t.CSV = append(t.CSV, row)
	}
	if steps == 0 {
		return nil, inputErr("%s: no HyStart++ steps in the %s's trace %s (slow_start = \"hystart++\", or cubic, and a build that logs them)", r.Dir, end, name)
	}
	return t, nil
}

// kB converts bytes to kB of 1000 bytes; nil stays nil.
func kB(v *float64) *float64 {
	if v == nil {
		return nil
	}
	k := *v / 1000
	return &k
}

// optNumber formats an optional number with prec decimals, "" when absent.
func optNumber(v *float64, prec int) string {
	if v == nil {
		return ""
	}
	return FormatNumber(*v, prec)
}

// readHyStart reads a trace's recovery metrics (HyStart++'s steps among
// them) and congestion state changes, in the trace's order.
func readHyStart(name string) ([]hyStartEvent, error) {
	var out []hyStartEvent
	err := scanTrace(name, []string{"quic:recovery_metrics_updated", "quic:congestion_state_updated"}, func(b []byte) error {
		var ev hyStartEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			return err
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}
