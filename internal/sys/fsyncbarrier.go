//go:build !darwin

package sys

// FsyncBarrier is Fsync: only macOS separates ordering a file's writes
// (F_BARRIERFSYNC) from flushing the drive's cache (F_FULLFSYNC); see
// rename_darwin.go.
func FsyncBarrier(fd int) error { return Fsync(fd) }
