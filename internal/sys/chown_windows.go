package sys

// Fchown is unsupported: see sys_windows.go.
func Fchown(fd, uid, gid int) error { return ErrUnsupported }
