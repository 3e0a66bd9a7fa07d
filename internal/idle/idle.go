// Package idle asks the kernel whether a file is open anywhere: the proof
// that a staging file's writer is gone (it keeps the file open from its
// creation until it commits it), shared by the store's reaper and the state
// lock's residue sweep.
package idle

import "os"

// Unopened reports whether no descriptor for f's file exists on this host
// besides f itself. why is "" when the kernel proved it, else why it could
// not (a process has the file open, or the kernel cannot tell here: another
// system, a network filesystem, a file owned by another user). err is an
// error of the probe itself.
func Unopened(f *os.File) (why string, err error) { return unopened(f) }
