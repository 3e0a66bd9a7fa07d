package store

import (
	"os"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
)

// inspectResidue captures name's identity and, when askIdle, asks the
// kernel whether any other descriptor for it exists (sys.ProbeUnopened: on
// Linux F_SETLEASE(F_WRLCK) is refused while any other process, or this
// one, has the file open; elsewhere nothing can prove it). idle is "" when
// the kernel proved the file unopened, else the reason it could not.
func inspectResidue(d *exactfs.Dir, name string, askIdle bool) (exactfs.Identity, string, error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return exactfs.Identity{}, "", err
	}
	defer f.Close()
	_, id, err := exactfs.CaptureFile(f)
	if err != nil || !askIdle {
		return id, "", err
	}
	idle := ""
	var probe error
	err = sys.Control(f, func(fd int) error {
		probe = sys.ProbeUnopened(fd)
		return nil
	})
	switch {
	case probe == sys.ErrUnsupported:
		idle = "this platform cannot prove that no process has it open"
	case probe == sys.ErrWouldBlock:
		idle = "a process has it open"
	case probe != nil:
		idle = "the kernel cannot tell whether it is open (" + probe.Error() + ")"
	}
	return id, idle, err
}
