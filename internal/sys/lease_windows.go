package sys

import (
	"syscall"

	"golang.org/x/sys/windows"
)

// ProbeUnopened has no Windows meaning: a share-mode probe that excludes
// every other handle also conflicts with fd itself, so it cannot tell fd
// from another opener. It fails closed.
func ProbeUnopened(fd int) error { return ErrUnsupported }

// ProbeNoWriter asks whether any handle that may write the file fd is open
// on exists (fd itself read-only), in any process and, over SMB, on any
// client: it opens the same file once more through fd with read access,
// sharing read and delete but not write, which the system grants only
// when no open handle has write access. The probe handle is closed at
// once. nil: no writer; ErrWouldBlock: a handle with write access exists
// (or one that shares no reading); other errors: the system could not
// tell.
func ProbeNoWriter(fd int) error {
	if !ready {
		return ErrUnsupported
	}
	return probeNoWriter(fd)
}

func probeNoWriter(fd int) error {
	ph, err := reopen(h(fd), windows.FILE_READ_DATA, windows.FILE_SHARE_READ|windows.FILE_SHARE_DELETE, windows.FILE_NON_DIRECTORY_FILE)
	if err == syscall.EBUSY {
		return ErrWouldBlock
	}
	if err != nil {
		return err
	}
	return errnoOf(windows.CloseHandle(ph))
}
