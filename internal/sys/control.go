package sys

import "os"

// Control runs fn on f's descriptor. f stays open while fn runs (a
// concurrent f.Close waits for it), and the descriptor is not switched to
// blocking mode, as f.Fd would switch it. The error is Control's own (f is
// closed) or fn's.
func Control(f *os.File, fn func(fd int) error) error {
	sc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := sc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
