package sys

import "golang.org/x/sys/windows"

// Reopen opens the file fd is open on once more, for reading: a new
// handle of its own (the empty name relative to fd's handle, never a
// duplicate of fd), so it holds none of fd's byte-range locks and sees
// them as any other opener does. Over SMB it is a new open on the server.
func Reopen(fd int) (int, error) {
	if !ready {
		return -1, ErrUnsupported
	}
	rh, err := reopen(h(fd), windows.FILE_GENERIC_READ, shareAll, windows.FILE_NON_DIRECTORY_FILE)
	if err != nil {
		return -1, err
	}
	return int(rh), nil
}
