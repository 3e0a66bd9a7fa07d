package locker

import (
	"context"
	"fmt"
	"sync"

	"github.com/exactfs/exactfs/statelock"
)

// File returns the Locker of the state file stateFile on the default
// backend, statelock (the state-file lock the TypeScript peers use too).
// opts are statelock's options (wait budget, host identity).
//
// A file lock cannot be taken from a live holder, only reclaimed from a dead
// one, so the Lost channel of its leases is never closed: a holder learns of
// a lock that was removed by hand at Unlock, which then fails.
func File(stateFile string, opts ...statelock.Option) Locker {
	return &fileLocker{path: stateFile, opts: opts}
}

type fileLocker struct {
	path string
	opts []statelock.Option
}

func (f *fileLocker) Lock(ctx context.Context) (Lease, error) {
	h, err := statelock.Lock(ctx, f.path, f.opts...)
	if err != nil {
		return nil, err
	}
	return &fileLease{held: h}, nil
}

func (f *fileLocker) TryLock(ctx context.Context) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	h, err := statelock.TryLock(f.path, f.opts...)
	if err != nil {
		return nil, err
	}
	return &fileLease{held: h}, nil
}

func (f *fileLocker) Update(ctx context.Context, fn func(old []byte) ([]byte, error)) error {
	return statelock.Update(ctx, f.path, fn, f.opts...)
}

func (f *fileLocker) Inspect(ctx context.Context) (Status, error) {
	if err := ctx.Err(); err != nil {
		return Status{}, err
	}
	st, err := statelock.Inspect(f.path, f.opts...)
	if err != nil {
		return Status{}, err
	}
	out := Status{Backend: "file", Lock: st.LockPath, State: string(st.State), Waiters: -1, Detail: st.Detail}
	switch st.State {
	case statelock.StateReleased:
		out.State = "free"
		out.Detail = "released tombstone"
	case statelock.StateLegacy:
		out.Detail = st.Legacy
	}
	if h := st.Holder; h != nil && (st.State == statelock.StateHeld || st.State == statelock.StateStale) {
		out.Holder = &Holder{
			Pid:     h.Pid,
			Host:    h.HostID,
			Since:   h.Modified,
			Token:   h.Token,
			Verdict: h.Verdict,
			Detail:  h.Description,
		}
	}
	return out, nil
}

// fileLease is a held statelock lock.
type fileLease struct {
	held *statelock.Held
	once sync.Once
	lost chan struct{} // never closed: see File
}

func (l *fileLease) Token() string { return l.held.Token() }

func (l *fileLease) Lost() <-chan struct{} {
	l.once.Do(func() { l.lost = make(chan struct{}) })
	return l.lost
}

func (l *fileLease) Err() error { return nil }

func (l *fileLease) Unlock() error {
	if err := l.held.Unlock(); err != nil {
		return fmt.Errorf("releasing %s: %w", l.held.LockPath(), err)
	}
	return nil
}
