//go:build unix

package buildinfo

import (
	"fmt"
	"os"
	"syscall"
)

// fileKey names a file's version for the hash cache: its device, inode,
// size and modification time; "" when the system does not say.
func fileKey(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%x-%x-%d-%d", uint64(st.Dev), uint64(st.Ino), fi.Size(), fi.ModTime().UnixNano())
}
