//go:build !unix

package buildinfo

import "os"

// fileKey is "" where no inode is at hand: the hash is not cached.
func fileKey(os.FileInfo) string { return "" }
