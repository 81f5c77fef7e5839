package mpquic

// CopyBuffersHeld returns how many of Stream.ReadFrom's buffers are taken.
func CopyBuffersHeld() int64 { return copyBufsHeld.Load() }
