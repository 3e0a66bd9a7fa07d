package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/statelock"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var errAnswerLost = status.Error(codes.Unavailable, "the answer of the commit was lost (test seam)")

// Commit describes an Update that wrote.
type Commit struct {
	Token    int64 // the fencing token: our lock key's create revision
	Acquired int64 // the revision at which we held the lock and read the state
	Read     int64 // the mod revision of the state we read (0: there was none)
	Revision int64 // the revision of our write, which also released the lock
}

// UnknownOutcomeError reports a commit whose answer never came and whose
// outcome could not be established afterwards: the write may or may not
// have been applied. fn is not run again; read the state to find out.
type UnknownOutcomeError struct {
	Key string
	Err error
}

func (e *UnknownOutcomeError) Error() string {
	return fmt.Sprintf("the commit of %s got no answer and its outcome could not be established (the write may have been applied; read the key before trying again): %v", e.Key, e.Err)
}

func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// Update is locker.Locker's Update: see UpdateCommit.
func (l *Lock) Update(ctx context.Context, fn func(old []byte) ([]byte, error)) error {
	_, err := l.UpdateCommit(ctx, fn)
	return err
}

// UpdateCommit locks, reads the state key (nil when absent) in the same
// transaction that finds the lock ours, calls fn once, and commits what fn
// returned in one transaction that also releases the lock, guarded by the
// fence: our lock key's create revision and the state's mod revision must
// be unchanged. If fn fails, nothing is written, the lock is released, and
// fn's error is returned. If the lock was lost before the commit, nothing
// is written and the error matches locker.ErrLost; fn is not called again.
// As with the file backend, fn returning statelock.ErrNoChange (or an
// error wrapping it) writes nothing and UpdateCommit returns a Commit
// without a Revision and nil; fn returning no bytes writes nothing and
// fails with statelock.ErrEmptyResult unless WithAllowEmpty(true).
func (l *Lock) UpdateCommit(ctx context.Context, fn func(old []byte) ([]byte, error)) (Commit, error) {
	return l.UpdateHeld(ctx, func(_ *Held, old []byte) ([]byte, error) { return fn(old) })
}

// UpdateHeld is UpdateCommit whose fn also gets the acquisition it runs
// under, for a fn that acts elsewhere too and passes on the fencing token
// (h.Token, h.Key). fn must not call h.Unlock: the commit releases the lock.
func (l *Lock) UpdateHeld(ctx context.Context, fn func(h *Held, old []byte) ([]byte, error)) (Commit, error) {
	h, err := l.acquire(ctx, l.c.cfg.wait)
	if err != nil {
		return Commit{}, err
	}
	c := Commit{Token: h.rev, Acquired: h.acquired, Read: h.stateRev}
	out, ferr := fn(h, h.state)
	switch {
	case errors.Is(ferr, statelock.ErrNoChange):
		// The file backend's "leave it as it is": nothing is written, the
		// lock is released, and the caller is told nil.
		return c, h.Unlock()
	case ferr == nil && len(out) == 0 && !h.l.c.cfg.allowEmpty:
		ferr = fmt.Errorf("update of %s: the update function returned no bytes, which would leave an empty value; "+
			"the key was left untouched (return statelock.ErrNoChange to write nothing, or pass WithAllowEmpty(true) "+
			"to write an empty value): %w", h.l.key, statelock.ErrEmptyResult)
	}
	if ferr != nil {
		if uerr := h.Unlock(); uerr != nil {
			return c, errors.Join(ferr, uerr)
		}
		return c, ferr
	}
	c.Revision, err = h.commit(ctx, out)
	return c, err
}

// commit writes val under the fence and releases the lock in the same
// transaction. The identical transaction is sent again after an
// unanswered attempt for as long as our lock key exists (so it has not
// applied); once the key is gone, resolve tells whether it applied.
func (h *Held) commit(ctx context.Context, val []byte) (int64, error) {
	h.mu.Lock()
	h.released = true
	if h.stop != nil {
		h.stop()
	}
	h.mu.Unlock()
	cli := h.l.c.cli
	key := h.l.key
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.l.c.cfg.opTimeout)
	defer cancel()
	delay := 20 * time.Millisecond
	per := h.l.c.firstAttempt()
	var lastErr error
	for ; ; per *= 2 {
		actx, acancel := context.WithTimeout(bctx, per)
		t0 := time.Now()
		r, err := cli.Txn(actx).
			If(clientv3.Compare(clientv3.CreateRevision(h.myKey), "=", h.rev),
				clientv3.Compare(clientv3.ModRevision(key), "=", h.stateRev)).
			Then(clientv3.OpPut(key, string(val)), clientv3.OpDelete(h.myKey)).
			Else(clientv3.OpGet(h.myKey), clientv3.OpGet(key, clientv3.WithKeysOnly())).
			Commit()
		acancel()
		if err == nil {
			h.l.c.observe(time.Since(t0))
		}
		if err == nil && hook.IsSet(hook.EtcdCommitAnswerLost) {
			// Test seam: the commit was applied (or refused) but its
			// answer is treated as lost, as when the member dies right
			// after the leader applied it.
			hook.Fire(hook.EtcdCommitAnswerLost, key)
			r, err = nil, errAnswerLost
		}
		switch {
		case err == nil && r.Succeeded:
			return r.Header.Revision, nil
		case err == nil:
			mine := r.Responses[0].GetResponseRange().Kvs
			if len(mine) == 1 && mine[0].CreateRevision == h.rev {
				// Still ours: the state key moved under the lock.
				now := int64(0)
				if kvs := r.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
					now = kvs[0].ModRevision
				}
				h.l.dequeue(h)
				return 0, fmt.Errorf("commit of %s refused: we read it at mod revision %d, it is now at %d; nothing was written: %w", key, h.stateRev, now, ErrStateChanged)
			}
			return h.resolve(bctx)
		case !transient(err):
			h.l.dequeue(h)
			return 0, fmt.Errorf("commit of %s (etcd %v): %w", key, cli.Endpoints(), err)
		}
		lastErr = err
		t := time.NewTimer(delay)
		select {
		case <-bctx.Done():
			t.Stop()
			return h.resolveOrUnknown(lastErr)
		case <-t.C:
		}
		delay = min(2*delay, 300*time.Millisecond)
	}
}

// resolveOrUnknown makes a last attempt, with a fresh budget, to learn the
// outcome of a commit whose answers never came.
func (h *Held) resolveOrUnknown(lastErr error) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), h.l.c.cfg.opTimeout)
	defer cancel()
	r, err := h.l.c.cli.Get(ctx, h.myKey)
	if err != nil {
		// If our key is still there, it must not hold the queue for as
		// long as the shared lease lives.
		h.l.c.strand(h.myKey)
		return 0, &UnknownOutcomeError{Key: h.l.key, Err: errors.Join(lastErr, err)}
	}
	if len(r.Kvs) == 1 && r.Kvs[0].CreateRevision == h.rev {
		// Not applied, and we give up: release, nothing was written.
		h.l.dequeue(h)
		return 0, &UnavailableError{Step: "committing " + h.l.key + " (nothing was written)", Endpoints: fmt.Sprint(h.l.c.cli.Endpoints()), Attempts: 0, Err: lastErr}
	}
	return h.resolve(ctx)
}

// resolve is called once our lock key is gone: the revision that deleted
// it either also wrote the state key (our commit applied) or did not (the
// lease expired, or the key was deleted, before any commit of ours).
func (h *Held) resolve(ctx context.Context) (int64, error) {
	cli := h.l.c.cli
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var gone int64
	for gone == 0 {
		wch := cli.Watch(wctx, h.myKey, clientv3.WithRev(h.rev+1), clientv3.WithFilterPut())
		for wr := range wch {
			if err := wr.Err(); err != nil {
				if errors.Is(err, rpctypes.ErrCompacted) {
					return 0, &UnknownOutcomeError{Key: h.l.key, Err: err}
				}
				break
			}
			if len(wr.Events) > 0 {
				gone = wr.Events[0].Kv.ModRevision
				break
			}
		}
		if ctx.Err() != nil {
			return 0, &UnknownOutcomeError{Key: h.l.key, Err: ctx.Err()}
		}
		if gone == 0 {
			// The watch ended (a member went away): watch again, not in a
			// tight loop.
			time.Sleep(50 * time.Millisecond)
		}
	}
	var applied bool
	err := h.l.c.retry(ctx, "reading "+h.l.key+" to learn whether our commit applied", func(ctx context.Context) error {
		r, err := cli.Get(ctx, h.l.key, clientv3.WithRev(gone), clientv3.WithKeysOnly())
		if err == nil {
			applied = len(r.Kvs) == 1 && r.Kvs[0].ModRevision == gone
		}
		return err
	})
	if err != nil {
		return 0, &UnknownOutcomeError{Key: h.l.key, Err: err}
	}
	if applied {
		return gone, nil
	}
	return 0, &LostError{Key: h.myKey, Token: h.rev, Op: "commit",
		Why: fmt.Sprintf("our lock key was deleted at revision %d without our write (its session lease expired, or was revoked by recover --release-holder: was this process paused or cut off from the cluster for longer than the TTL?)", gone)}
}
