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

// NoWriter reports whether no process on this host has f's file open for
// writing (f itself must be open read-only). why is "" when the kernel
// proved it, else why it could not. Readers do not count: this is the proof
// that a record nobody can still be writing is whole or abandoned.
func NoWriter(f *os.File) (why string, err error) { return noWriter(f) }
