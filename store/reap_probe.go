package store

import (
	"os"

	"github.com/exactfs/exactfs"
)

// inspectResidue captures name's identity and, when askIdle, asks the
// kernel whether any other descriptor for it exists (exactfs.ProbeUnopened: a
// write lease is refused while any other process, or this one, has the
// file open). idle is "" when the kernel proved the file unopened, else the
// reason it could not.
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
	why, err := exactfs.ProbeUnopened(f)
	return id, why, err
}
