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
	_, why := answer(res, busy)
	return why, nil
}

// Answer is what the kernel could say about a question on open files.
// The zero value is Unknown, so that an answer nobody set never reads as a
// proof.
type Answer int8

const (
	// Unknown: the kernel cannot tell here (no lease probe on this system,
	// a file it refuses to probe, a probe that failed). It proves nothing
	// either way: a caller that would remove or reclaim on No must keep on
	// Unknown, and say that it did not know.
	Unknown Answer = iota
	// No: the kernel proved there is no such descriptor.
	No
	// Yes: the kernel proved there is one.
	Yes
)

func (a Answer) String() string {
	switch a {
	case No:
		return "no"
	case Yes:
		return "yes"
	}
	return "unknown"
}

// Writer reports whether a process on this host has f's file open for
// writing (f itself read-only): Yes or No when the kernel proved it,
// Unknown when it cannot tell, with why in words for Unknown and Yes ("" for
// No). Unknown is not No: it is what every system without Linux's lease
// probe answers (macOS, the BSDs), and what Linux answers for files it will
// not lease.
func Writer(f *os.File) (Answer, string) {
	var res error
	if err := sys.Control(f, func(fd int) error { res = sys.ProbeNoWriter(fd); return nil }); err != nil {
		return Unknown, "the kernel cannot tell whether it is open for writing (" + err.Error() + ")"
	}
	return answer(res, "a process has it open for writing")
}

// answer maps a lease probe's result onto an Answer and its reason.
func answer(res error, busy string) (Answer, string) {
	switch {
	case res == nil:
		return No, ""
	case res == sys.ErrWouldBlock:
		return Yes, busy
	case res == sys.ErrUnsupported:
		return Unknown, "the kernel cannot tell whether it is open on this system"
	}
	return Unknown, "the kernel cannot tell whether it is open (" + res.Error() + ")"
}
