package scheduler

import "time"

// creditShort is the rule of option credit (cwr-plus; cwr and cwr-red as
// an option of ours): it reports whether a background packet would leave
// less of the connection's flow-control credit (Work.Waiting.SendWindow)
// than the announced messages due within the largest smoothed RTT of the
// candidates need, while some candidate has bytes in flight (so that an
// acknowledgement, and the peer's MAX_DATA, can come). In slow start the
// bulk data would otherwise use up the peer's MAX_DATA and a message wait
// for the next.
func creditShort(now time.Time, paths []PathInfo, cand []int, sources []Source, w Work) bool {
	if len(sources) == 0 {
		return false
	}
	var srtt time.Duration
	busy := false
	for _, i := range cand {
		srtt = max(srtt, paths[i].SRTT)
		busy = busy || paths[i].BytesInFlight > 0
	}
	if !busy {
		return false
	}
	var need uint64
	for k := range sources {
		src := &sources[k]
		src.Due(now, now.Add(srtt), func(time.Time) { need += uint64(src.Size) })
	}
	return need > 0 && w.Waiting.SendWindow < need+uint64(w.Size)
}
