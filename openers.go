package exactfs

import (
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// The no-writer probes: whether a file is open anywhere on this host (the
// proof that a staging file's writer is gone: it keeps the file open from
// its creation until it commits it), and whether it is open for writing
// anywhere (the proof that an incomplete record was abandoned by its
// writer). They ask the kernel through the open file itself: Linux grants
// a lease (fcntl F_SETLEASE) only when no conflicting descriptor exists
// anywhere. The store's reaper and the state lock's residue sweep and
// judge call them; they decide what to do with the answer.

// Answer is what the kernel could say about a question on open files.
// The zero value is AnswerUnknown, so that an answer nobody set never reads
// as a proof.
type Answer int8

const (
	// AnswerUnknown: the kernel cannot tell here (no lease probe on this
	// system, a file it refuses to probe, a probe that failed). It proves
	// nothing either way: a caller that would remove or reclaim on
	// AnswerNo must keep on AnswerUnknown, and say that it did not know.
	AnswerUnknown Answer = iota
	// AnswerNo: the kernel proved there is no such descriptor.
	AnswerNo
	// AnswerYes: the kernel proved there is one.
	AnswerYes
)

// String returns "no", "yes" or "unknown".
func (a Answer) String() string {
	switch a {
	case AnswerNo:
		return "no"
	case AnswerYes:
		return "yes"
	}
	return "unknown"
}

// ProbeUnopened reports whether no descriptor for f's file exists on this
// host besides f itself. why is "" when the kernel proved it, else why it
// could not (a process has the file open, or the kernel cannot tell here:
// another system, a network filesystem, a file owned by another user). err
// is an error of the probe itself.
func ProbeUnopened(f *os.File) (why string, err error) {
	return probeOpen(f, sys.ProbeUnopened, "a process has it open")
}

// ProbeNoWriter reports whether no process on this host has f's file open
// for writing (f itself must be open read-only). why is "" when the kernel
// proved it, else why it could not. Readers do not count: this is the proof
// that a record nobody can still be writing is whole or abandoned.
func ProbeNoWriter(f *os.File) (why string, err error) {
	return probeOpen(f, sys.ProbeNoWriter, "a process has it open for writing")
}

// ProbeWriter reports whether a process on this host has f's file open for
// writing (f itself read-only): AnswerYes or AnswerNo when the kernel
// proved it, AnswerUnknown when it cannot tell, with why in words for
// AnswerUnknown and AnswerYes ("" for AnswerNo). AnswerUnknown is not
// AnswerNo: it is what every system without Linux's lease probe answers
// (macOS, the BSDs), and what Linux answers for files it will not lease.
func ProbeWriter(f *os.File) (Answer, string) {
	var res error
	if err := sys.Control(f, func(fd int) error { res = sys.ProbeNoWriter(fd); return nil }); err != nil {
		return AnswerUnknown, "the kernel cannot tell whether it is open for writing (" + err.Error() + ")"
	}
	return openAnswer(res, "a process has it open for writing")
}

// probeOpen runs one of internal/sys's lease probes on f's descriptor and
// says in words what it could not prove.
func probeOpen(f *os.File, lease func(fd int) error, busy string) (string, error) {
	var res error
	if err := sys.Control(f, func(fd int) error { res = lease(fd); return nil }); err != nil {
		return "", err
	}
	_, why := openAnswer(res, busy)
	return why, nil
}

// openAnswer maps a lease probe's result onto an Answer and its reason.
func openAnswer(res error, busy string) (Answer, string) {
	switch {
	case res == nil:
		return AnswerNo, ""
	case res == sys.ErrWouldBlock:
		return AnswerYes, busy
	case res == sys.ErrUnsupported:
		return AnswerUnknown, "the kernel cannot tell whether it is open on this system"
	}
	return AnswerUnknown, "the kernel cannot tell whether it is open (" + res.Error() + ")"
}
