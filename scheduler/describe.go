package scheduler

import "sync"

var (
	summaryMu       sync.RWMutex
	pathSummaries   = map[string]string{}
	streamSummaries = map[string]string{}
)

// DescribePath gives the path scheduler registered under name a summary
// of one or two sentences, which mpq help schedulers and the reference
// print beside the options' own Doc.
func DescribePath(name, summary string) {
	summaryMu.Lock()
	defer summaryMu.Unlock()
	pathSummaries[name] = summary
}

// DescribeStream is DescribePath for a stream scheduler.
func DescribeStream(name, summary string) {
	summaryMu.Lock()
	defer summaryMu.Unlock()
	streamSummaries[name] = summary
}

// PathSummary is the summary DescribePath gave name ("" if none).
func PathSummary(name string) string {
	summaryMu.RLock()
	defer summaryMu.RUnlock()
	return pathSummaries[name]
}

// StreamSummary is the summary DescribeStream gave name ("" if none).
func StreamSummary(name string) string {
	summaryMu.RLock()
	defer summaryMu.RUnlock()
	return streamSummaries[name]
}

func init() {
	DescribePath("lowrtt", "Each packet on the path with the lowest smoothed RTT whose congestion window has room: the default of MP-QUIC and MPTCP.")
	DescribePath("round-robin", "The paths in turn, skipping those whose window is full: MP-QUIC's round-robin baseline.")
	DescribePath("cwr", "Congestion Window Reservation (Noroozi et al., Section III-D1): room in the lowest-RTT path's window is kept free for the announced priority messages; the paper's text by default, other readings and our rules as options.")
	DescribePath("cwr-red", "CWR + Redundancy (Noroozi et al., Section III-D2): reservations on every path, and priority messages duplicated on every path that can take them; the paper's text by default.")
	DescribePath("cwr-red-fast", "cwr-red with our earlier rules on by default (reservation = whole, wait_for_fast_path, resend_lost_copy_on = fast, retransmission_size = lost), so that results measured with them can be rerun.")
	DescribePath("cwr-plus", "The project's own priority scheduler, not the reference paper's: cwr's reservations with rules against the queue, the flow-control credit and slow start that delay priority messages.")
	DescribePath("sr", "Selective redundancy (Mogensen et al.), the baseline the CWR paper cites: priority packets at once on every path, whatever their windows; the bytes beyond a window are borrowed from it; other data as lowrtt.")
	DescribePath("redundant", "Every packet on every path that can take it, lowest RTT first.")
	DescribePath("ecf", "Earliest Completion First (Lim et al., CoNEXT 2017): waits for the fastest path when the slower one would finish later; our reading of the paper's Algorithm 1.")
	DescribePath("blest", "Blocking Estimation (Ferlin et al., IFIP Networking 2016): skips the slower path when a packet there would leave the faster path too little of the send window; our reading of the algorithm.")
	DescribeStream("round-robin", "The streams with data in turn, by increasing stream ID, as many as fit in a packet: quic-go's and MP-QUIC's default.")
	DescribeStream("priority-fifo", "Priority FIFO (Noroozi et al., Section III-C): streams with lost data first, then priority streams, then the others, each set in the order its data became ready; one STREAM frame a packet.")
}
