package idle

import (
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// unopened asks the kernel through a write-lease probe
// (sys.ProbeUnopened): it is granted only while no other descriptor for
// the file exists anywhere.
func unopened(f *os.File) (string, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return "", err
	}
	var probe error
	if err := sc.Control(func(fd uintptr) { probe = sys.ProbeUnopened(int(fd)) }); err != nil {
		return "", err
	}
	switch {
	case probe == nil:
		return "", nil
	case probe == sys.ErrWouldBlock:
		return "a process has it open", nil
	default:
		return "the kernel cannot tell whether it is open (" + probe.Error() + ")", nil
	}
}
