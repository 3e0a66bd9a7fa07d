package combine

import (
	"context"
	"sync"
	"time"
)

// Map holds one Group per key, for as long as some caller uses it: a Group
// is made by the first Do of its key and dropped when the last one
// returns, so a process that touches many resources keeps no Group of an
// idle one. The zero value is ready to use.
//
// Two keys are two Groups: callers batch together only when their keys
// are equal, so a key must never be equal for two different resources
// (a key that names one resource in two ways merely forgoes batching).
type Map[K comparable, S any] struct {
	mu     sync.Mutex
	groups map[K]*mapEntry[S]
}

type mapEntry[S any] struct {
	g    Group[S]
	refs int
}

// Do is Group.Do on the Group of key.
func (m *Map[K, S]) Do(ctx context.Context, key K, acquire Acquire[S], op Op[S]) error {
	return m.DoWithin(ctx, key, time.Time{}, nil, acquire, op)
}

// DoWithin is Do for a caller whose wait behind other callers' batches
// ends at deadline (none when zero) with cause, as if ctx had that
// deadline: the context for it is made only if the caller has to wait,
// not on every call. acquire still gets ctx itself.
func (m *Map[K, S]) DoWithin(ctx context.Context, key K, deadline time.Time, cause error, acquire Acquire[S], op Op[S]) error {
	m.mu.Lock()
	if m.groups == nil {
		m.groups = make(map[K]*mapEntry[S])
	}
	e := m.groups[key]
	if e == nil {
		e = new(mapEntry[S])
		m.groups[key] = e
	}
	e.refs++
	m.mu.Unlock()
	defer func() {
		// Deferred: a panicking operation must not leave its Group behind.
		m.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(m.groups, key)
		}
		m.mu.Unlock()
	}()
	return e.g.do(ctx, deadline, cause, acquire, op)
}

// Len reports how many Groups are in use.
func (m *Map[K, S]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.groups)
}

// Queued reports how many callers of key wait for its next batch (tests
// and diagnostics).
func (m *Map[K, S]) Queued(key K) int {
	m.mu.Lock()
	e := m.groups[key]
	m.mu.Unlock()
	if e == nil {
		return 0
	}
	return e.g.queued()
}
