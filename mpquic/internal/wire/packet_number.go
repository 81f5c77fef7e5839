package wire

// MaxPacketNumber is the largest packet number, 2^62-1 (RFC 9000
// Section 12.3).
const MaxPacketNumber uint64 = 1<<62 - 1

// PacketNumberLen returns how many bytes (1 to 4) the truncated encoding of
// packet number pn needs so that a receiver that has seen largestAcked
// decodes it correctly: the encoding must represent more than twice the
// number of unacknowledged packets (RFC 9000 Section 17.1 and
// Appendix A.2). largestAcked is -1 when nothing was acknowledged yet.
func PacketNumberLen(pn uint64, largestAcked int64) int {
	var unacked uint64
	switch {
	case largestAcked < 0:
		unacked = pn + 1
	case pn > uint64(largestAcked):
		unacked = pn - uint64(largestAcked)
	default:
		return 1
	}
	// The window 2^(8n) must exceed 2*unacked.
	for n := 1; n < 4; n++ {
		if unacked < 1<<(8*n-1) {
			return n
		}
	}
	return 4
}

// DecodePacketNumber recovers a full packet number from its pnLen-byte
// truncated encoding, choosing the value closest to the one after largest,
// the largest packet number received so far in the space or -1 if none
// (RFC 9000 Appendix A.3). pnLen is clamped to 1..4.
func DecodePacketNumber(largest int64, truncated uint64, pnLen int) uint64 {
	pnLen = min(max(pnLen, 1), 4)
	if largest < -1 {
		largest = -1
	}
	expected := uint64(largest + 1)
	win := uint64(1) << (8 * pnLen)
	hwin := win / 2
	mask := win - 1
	candidate := expected&^mask | truncated&mask
	// candidate <= expected - hwin, written without underflow.
	if candidate+hwin <= expected && candidate < 1<<62-win {
		return candidate + win
	}
	if candidate > expected+hwin && candidate >= win {
		return candidate - win
	}
	return candidate
}

// appendPacketNumber appends the pnLen (1..4) low-order bytes of pn.
func appendPacketNumber(b []byte, pn uint64, pnLen int) []byte {
	switch pnLen {
	case 1:
		return append(b, byte(pn))
	case 2:
		return append(b, byte(pn>>8), byte(pn))
	case 3:
		return append(b, byte(pn>>16), byte(pn>>8), byte(pn))
	default:
		return append(b, byte(pn>>24), byte(pn>>16), byte(pn>>8), byte(pn))
	}
}
