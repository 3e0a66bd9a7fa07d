package store

import (
	"context"
	"errors"
	"os"

	"github.com/exactfs/exactfs"
)

// LocksDir is the directory, inside a store, that holds its fence leases.
const LocksDir = "locks"

// AcquireFence takes the lease locks/.gjc-<name>.lock inside the store as
// its mutation fence. From then on every mutation asserts the lease before
// and after it commits, and fails with ErrLeaseLost (publishing nothing,
// where the lease is found lost before the commit) once the lease is gone,
// released included. A store has at most one fence.
func (s *Store) AcquireFence(ctx context.Context, name string, opts ...LeaseOption) (*Lease, error) {
	if err := validLeaseName(name); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, newErr("fence", s.path, exactfs.CodeInvalidRequest, "the store is closed", os.ErrClosed)
	}
	if s.fence != nil {
		return nil, newErr("fence", s.path, exactfs.CodeInvalidRequest, "the store already has a mutation fence", nil)
	}
	if err := s.checkBinding("fence", LocksDir); err != nil {
		return nil, err
	}
	if _, err := s.mkdir("fence", LocksDir); err != nil && !errors.Is(err, exactfs.ErrDestinationExists) {
		return nil, err
	}
	d, closeDir, err := s.parentDir("fence", LocksDir)
	if err != nil {
		return nil, err
	}
	_ = closeDir // the lease owns d from here on
	cfg := defaultLeaseConfig()
	for _, o := range opts {
		o(&cfg)
	}
	l, err := acquireIn(ctx, d, exactfs.FenceLeaseName(name), cfg)
	if err != nil {
		d.Close()
		return nil, err
	}
	l.ownsDir = true
	if err := s.checkBinding("fence", LocksDir); err != nil {
		return nil, errors.Join(err, l.Release())
	}
	s.fence = l
	return l, nil
}

func (s *Store) fenceLease() *Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fence
}

// before runs the checks that precede a mutation.
func (s *Store) before(op, rel string) error {
	if err := s.checkBinding(op, rel); err != nil {
		return err
	}
	if l := s.fenceLease(); l != nil {
		if err := l.AssertOwned(); err != nil {
			return &Error{Op: op, Path: s.join(rel), Code: CodeLeaseLost, Err: err, Detail: "refusing to mutate: the store's fence lease is lost"}
		}
	}
	return nil
}

// after runs the same checks once the mutation committed; a failure says
// so (Committed).
func (s *Store) after(op, rel string) error {
	err := s.before(op, rel)
	var e *Error
	if errors.As(err, &e) {
		e.Committed = true
	}
	return err
}
