package hq

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SumSuffix is the suffix of a checksum request: a Files server answers
// "GET /x.sha256", when no file x.sha256 exists, with the Sum of /x.
const SumSuffix = ".sha256"

// maxSum bounds the size of a checksum response a client reads.
const maxSum = 4 << 10

// Sum is a file's SHA-256 and size as a server publishes them. Its text
// form (String) is two lines:
//
//	sha256 <64 hexadecimal digits>
//	size <bytes>
type Sum struct {
	SHA256 [sha256.Size]byte
	// Size is the file's size in bytes; -1 when the response gave none
	// (a file in sha256sum's format).
	Size int64
}

// String is the response body of a checksum request (without the size
// line when the size is unknown).
func (s Sum) String() string {
	if s.Size < 0 {
		return fmt.Sprintf("sha256 %s\n", hex.EncodeToString(s.SHA256[:]))
	}
	return fmt.Sprintf("sha256 %s\nsize %d\n", hex.EncodeToString(s.SHA256[:]), s.Size)
}

// ParseSum parses a checksum response: Sum's two lines, or a line of
// sha256sum's output ("<hex>  <name>"; the size is then unknown, -1).
func ParseSum(b []byte) (Sum, error) {
	sum := Sum{Size: -1}
	var haveHash bool
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "sha256":
			h, err := ParseSHA256(f[1])
			if err != nil {
				return Sum{}, err
			}
			sum.SHA256, haveHash = h, true
		case len(f) == 2 && f[0] == "size":
			n, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || n < 0 {
				return Sum{}, fmt.Errorf("hq: checksum: bad size %q", f[1])
			}
			sum.Size = n
		case len(f) >= 1 && !haveHash && len(f[0]) == 2*sha256.Size:
			h, err := ParseSHA256(f[0])
			if err != nil {
				return Sum{}, err
			}
			sum.SHA256, haveHash = h, true
		default:
			return Sum{}, fmt.Errorf("hq: checksum: unexpected line %q", line)
		}
	}
	if !haveHash {
		return Sum{}, errors.New("hq: checksum: no SHA-256")
	}
	return sum, nil
}

// ParseSHA256 parses a SHA-256 written as 64 hexadecimal digits.
func ParseSHA256(s string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return h, fmt.Errorf("bad SHA-256 %q: want %d hexadecimal digits", s, 2*sha256.Size)
	}
	copy(h[:], b)
	return h, nil
}

// maxCachedSums bounds the checksums a Files server keeps.
const maxCachedSums = 1024

// Files serves the files under Root, as Serve does, and publishes their
// checksums: "GET /x.sha256", when no file x.sha256 exists, answers the Sum
// of /x. Checksums are computed one at a time (a flood of checksum requests
// costs one core at most) and kept while the file's size and modification
// time stay the same. Its methods are safe for concurrent use.
type Files struct {
	Root string

	hashing sync.Mutex // one file hashed at a time
	mu      sync.Mutex
	cache   map[sumKey]Sum
}

// sumKey identifies a version of a file.
type sumKey struct {
	name  string
	size  int64
	mtime time.Time
}

// Serve answers one request on s.
func (f *Files) Serve(s Stream) error { return serve(s, f.Root, f) }

// sum returns the checksum of the regular file name.
func (f *Files) sum(name string) (Sum, error) {
	file, err := openFile(name)
	if err != nil {
		return Sum{}, err
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return Sum{}, err
	}
	key := sumKey{name: name, size: st.Size(), mtime: st.ModTime()}
	f.mu.Lock()
	sum, ok := f.cache[key]
	f.mu.Unlock()
	if ok {
		return sum, nil
	}
	f.hashing.Lock()
	defer f.hashing.Unlock()
	h := sha256.New()
	n, err := io.Copy(h, bufio.NewReaderSize(file, 64<<10))
	if err != nil {
		return Sum{}, fmt.Errorf("hash %s: %w", name, err)
	}
	sum = Sum{Size: n}
	h.Sum(sum.SHA256[:0])
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cache == nil || len(f.cache) >= maxCachedSums {
		f.cache = make(map[sumKey]Sum)
	}
	f.cache[key] = sum
	return sum, nil
}

// GetSum requests the checksum of p ("GET p.sha256") on s.
func GetSum(ctx context.Context, s Stream, p string) (Sum, error) {
	var b limitedBuffer
	if _, err := Get(ctx, s, p+SumSuffix, &b); err != nil {
		return Sum{}, err
	}
	return ParseSum(b.b)
}

// limitedBuffer keeps up to maxSum bytes and fails beyond.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(l.b)+len(p) > maxSum {
		return 0, fmt.Errorf("checksum response longer than %d bytes", maxSum)
	}
	l.b = append(l.b, p...)
	return len(p), nil
}
