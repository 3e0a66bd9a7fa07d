package exactfs

import "io/fs"

// A WriteOption adjusts PublishWith, WriteFileWith and ReplaceExpectedWith.
type WriteOption func(*writeOptions)

type writeOptions struct {
	beforeCommit func() error
}

// BeforeCommit makes f run once the new bytes are staged and fsynced under
// their private name, right before they are renamed, linked or exchanged
// into place: the last moment at which the write can still be called off.
// A fence belongs here (is the lease still ours?). If f returns an error,
// nothing is committed: the staged file is removed, the destination is
// untouched, and f's error is returned as it is.
//
// f narrows the window between its check and the commit to a few system
// calls; it cannot close it. A fence that must hold at the commit itself
// needs the filesystem to enforce it (a lock the other writers honour).
func BeforeCommit(f func() error) WriteOption {
	return func(o *writeOptions) { o.beforeCommit = f }
}

func makeOptions(opts []WriteOption) writeOptions {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// commit runs the BeforeCommit callback, discarding s if it refuses.
func (o writeOptions) commit(s *staged) error {
	if o.beforeCommit == nil {
		return nil
	}
	if err := o.beforeCommit(); err != nil {
		s.discard()
		return err
	}
	return nil
}

// PublishWith is Publish with options.
func PublishWith(path string, data []byte, perm fs.FileMode, opts ...WriteOption) (Identity, error) {
	return publish(nil, path, data, perm, makeOptions(opts))
}

// PublishWith is (*Dir).Publish with options.
func (d *Dir) PublishWith(name string, data []byte, perm fs.FileMode, opts ...WriteOption) (Identity, error) {
	return publish(d, name, data, perm, makeOptions(opts))
}

// WriteFileWith is WriteFile with options.
func WriteFileWith(path string, data []byte, perm fs.FileMode, opts ...WriteOption) (Identity, error) {
	return writeFile(nil, path, data, perm, makeOptions(opts))
}

// WriteFileWith is (*Dir).WriteFile with options.
func (d *Dir) WriteFileWith(name string, data []byte, perm fs.FileMode, opts ...WriteOption) (Identity, error) {
	return writeFile(d, name, data, perm, makeOptions(opts))
}

// ReplaceExpectedWith is ReplaceExpected with options.
func ReplaceExpectedWith(path string, data []byte, want Identity, opts ...WriteOption) (Identity, error) {
	return replaceExpected(nil, path, data, want, makeOptions(opts))
}

// ReplaceExpectedWith is (*Dir).ReplaceExpected with options.
func (d *Dir) ReplaceExpectedWith(name string, data []byte, want Identity, opts ...WriteOption) (Identity, error) {
	return replaceExpected(d, name, data, want, makeOptions(opts))
}
