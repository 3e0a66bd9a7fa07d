//go:build !exactfs_portable

package sys

import "golang.org/x/sys/unix"

// ProbeUnopened asks the kernel whether any descriptor for the file fd is
// open on exists besides fd itself, anywhere on the host: a write lease
// (F_SETLEASE F_WRLCK) is granted only when none does. The lease is dropped
// at once; it is a probe, not a lock. It returns nil when the kernel proved
// the file otherwise unopened, ErrWouldBlock when a descriptor exists, and
// the errno when the kernel cannot tell.
func ProbeUnopened(fd int) error { return probeLease(fd, unix.F_WRLCK) }

// ProbeNoWriter asks the kernel whether any descriptor open for writing
// exists for the file fd is open on (fd itself read-only), anywhere on the
// host: a read lease (F_SETLEASE F_RDLCK) is granted only when none does.
// Readers do not count. Results as for ProbeUnopened.
func ProbeNoWriter(fd int) error { return probeLease(fd, unix.F_RDLCK) }

func probeLease(fd, kind int) error {
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, kind); err != nil {
		if err == unix.EAGAIN {
			return ErrWouldBlock
		}
		return err
	}
	_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
	return err
}
