package idle

import (
	"os"

	"golang.org/x/sys/unix"
)

// unopened takes a write lease (fcntl F_SETLEASE, F_WRLCK) on f and drops
// it at once: the kernel grants it only while no other descriptor for the
// file exists anywhere (EAGAIN otherwise). It is a probe, not a lock.
func unopened(f *os.File) (string, error) {
	return lease(f, unix.F_WRLCK, "a process has it open")
}

// noWriter takes a read lease (F_RDLCK) on f, open read-only, and drops it
// at once: the kernel grants it only while no descriptor anywhere has the
// file open for writing (EAGAIN otherwise).
func noWriter(f *os.File) (string, error) {
	return lease(f, unix.F_RDLCK, "a process has it open for writing")
}

func lease(f *os.File, kind int, busy string) (string, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	why := ""
	var lerr error
	if err := sc.Control(func(fd uintptr) {
		if _, err := unix.FcntlInt(fd, unix.F_SETLEASE, kind); err != nil {
			if err == unix.EAGAIN {
				why = busy
			} else {
				why = "the kernel cannot tell whether it is open (" + err.Error() + ")"
			}
			return
		}
		_, lerr = unix.FcntlInt(fd, unix.F_SETLEASE, unix.F_UNLCK)
	}); err != nil {
		return "", err
	}
	return why, lerr
}
