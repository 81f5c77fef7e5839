package scheduler

// Helpers shared by the priority-aware path schedulers (cwr, cwr-red, sr,
// redundant).

// isPriority reports whether the packet carries priority data: new data of
// a priority stream, or lost data of a priority stream sent again.
func isPriority(w Work) bool {
	return w.Class == ClassPriority || w.Class == ClassRetransmission && w.Priority
}

// byRTT returns the candidate indices ordered by increasing smoothed RTT;
// equal RTTs keep the order of paths (lower index first), as lowestRTT
// does.
func byRTT(paths []PathInfo, cand, dst []int) []int {
	dst = append(dst[:0], cand...)
	// Insertion sort: a handful of paths, and no allocation.
	for i := 1; i < len(dst); i++ {
		for j := i; j > 0 && paths[dst[j]].SRTT < paths[dst[j-1]].SRTT; j-- {
			dst[j], dst[j-1] = dst[j-1], dst[j]
		}
	}
	return dst
}

// fitsWith reports whether a packet of size bytes may leave on p when
// extra bytes of its congestion window are not available to it (reserved
// or borrowed): the window then has to hold bytes in flight, the packet
// and the extra bytes; the pacer has to let the packet out.
func fitsWith(p *PathInfo, size int, extra uint64) bool {
	return p.CanSend(size) && p.BytesInFlight+uint64(size)+extra <= p.CWND
}
