// Package idle asks the kernel whether a file is open anywhere: the proof
// that a staging file's writer is gone (it keeps the file open from its
// creation until it commits it), shared by the store's reaper and the state
// lock's residue sweep, and whether it is open for writing anywhere: the
// proof that an incomplete owner record was abandoned by its writer.
package idle

import (
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// Unopened reports whether no descriptor for f's file exists on this host
// besides f itself. why is "" when the kernel proved it, else why it could
// not (a process has the file open, or the kernel cannot tell here: another
// system, a network filesystem, a file owned by another user). err is an
// error of the probe itself.
func Unopened(f *os.File) (why string, err error) {
	return probe(f, sys.ProbeUnopened, "a process has it open")
}

// NoWriter reports whether no process on this host has f's file open for
// writing (f itself must be open read-only). why is "" when the kernel
// proved it, else why it could not. Readers do not count: this is the proof
// that a record nobody can still be writing is whole or abandoned.
func NoWriter(f *os.File) (why string, err error) {
	return probe(f, sys.ProbeNoWriter, "a process has it open for writing")
}

// probe runs one of internal/sys's lease probes on f's descriptor and says
// in words what it could not prove.
func probe(f *os.File, lease func(fd int) error, busy string) (string, error) {
	var res error
	if err := sys.Control(f, func(fd int) error { res = lease(fd); return nil }); err != nil {
		return "", err
	}
	switch {
	case res == nil:
		return "", nil
	case res == sys.ErrWouldBlock:
		return busy, nil
	case res == sys.ErrUnsupported:
		return "the kernel cannot tell whether it is open on this system", nil
	default:
		return "the kernel cannot tell whether it is open (" + res.Error() + ")", nil
	}
}

// HasWriter reports whether the kernel proved that a process on this host
// has f's file open for writing (f itself read-only). It is false also when
// the kernel cannot tell: callers use it to keep what is provably still
// being written, never as a proof that nothing is.
func HasWriter(f *os.File) bool {
	var res error
	if err := sys.Control(f, func(fd int) error { res = sys.ProbeNoWriter(fd); return nil }); err != nil {
		return false
	}
	return res == sys.ErrWouldBlock
}
