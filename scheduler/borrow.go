package scheduler

// borrowLedger keeps the bytes that priority packets sent beyond a path's
// congestion window borrowed from it (sr, cwr-plus): the path's usable
// window for other packets shrinks by them until the packet that borrowed
// them is acknowledged or declared lost.
type borrowLedger struct {
	// borrowed is the bytes borrowed per path; lent the bytes each
	// packet in flight borrowed.
	borrowed map[uint64]uint64
	lent     map[packetKey]uint64
}

type packetKey struct{ path, pn uint64 }

func newBorrowLedger() borrowLedger {
	return borrowLedger{borrowed: map[uint64]uint64{}, lent: map[packetKey]uint64{}}
}

// sent records a priority packet of size bytes sent as packet pn on the
// path of info (its state just before the packet): the bytes beyond its
// window, at most size, are borrowed.
func (l *borrowLedger) sent(info *PathInfo, pn uint64, size int) {
	end := info.BytesInFlight + uint64(size)
	if end <= info.CWND {
		return
	}
	over := min(end-info.CWND, uint64(size))
	l.lent[packetKey{info.ID, pn}] = over
	l.borrowed[info.ID] += over
}

// settled gives back what packet pn of pathID borrowed.
func (l *borrowLedger) settled(pathID, pn uint64) {
	k := packetKey{pathID, pn}
	b, ok := l.lent[k]
	if !ok {
		return
	}
	delete(l.lent, k)
	if l.borrowed[pathID] -= b; l.borrowed[pathID] == 0 {
		delete(l.borrowed, pathID)
	}
}
