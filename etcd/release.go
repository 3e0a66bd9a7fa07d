package etcd

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/exactfs/exactfs/etcd/internal/etcdhook"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Release describes a forced release of a lock's holder (ReleaseHolder):
// what was judged, and what was done to it.
type Release struct {
	Lock    string // the lock's queue prefix
	Holder  Entry  // the holder as judged: key, token, mod revision, lease, metadata, verdict
	Alive   bool   // it looked alive: its lease was kept and it was not proved dead
	Judged  time.Time
	DryRun  bool
	Revoked bool     // its lease was revoked (the holder key went with it)
	Deleted bool     // only the holder key was deleted (see OtherKeys, or it had no live lease)
	Others  []string // other keys the holder's lease keeps (other locks of the same client)
	Rev     int64    // the revision of the release, when known
}

// HolderChangedError is a forced release refused because the holder named
// is not the holder: the lock is free, someone else holds it, or the
// holder released it (or its key changed) while the release was under
// way. Nothing was done.
type HolderChangedError struct {
	Lock   string
	Want   int64  // the token named
	Now    *Entry // the holder found instead; nil when the lock was free
	During bool   // the change happened after the holder was judged
}

func (e *HolderChangedError) Error() string {
	switch {
	case e.During:
		return fmt.Sprintf("%s: the holder with token %d left the lock while it was being released (it released it, its lease ended, or its key changed); nothing was done", e.Lock, e.Want)
	case e.Now == nil:
		return fmt.Sprintf("%s: the lock is free: the holder with token %d is gone already; nothing was done", e.Lock, e.Want)
	}
	who := "a key that is not holder metadata"
	if e.Now.Meta != nil {
		who = e.Now.Meta.Describe()
	}
	return fmt.Sprintf("%s: the holder is token %d (%s), not token %d: the one named released the lock already; nothing was done", e.Lock, e.Now.Token, who, e.Want)
}

// HolderAliveError is a forced release refused because the holder looks
// alive and the caller did not say to release a live holder.
type HolderAliveError struct{ R *Release }

func (e *HolderAliveError) Error() string {
	h := e.R.Holder
	who := "its key is not holder metadata"
	if h.Meta != nil {
		who = fmt.Sprintf("%s, verdict %s (%s)", h.Meta.Describe(), h.Verdict.Verdict, h.Verdict.Reason)
	}
	return fmt.Sprintf("%s: the holder (token %d) looks alive: %s; its lease %x is kept (%s left of %s). Released, it would go on believing it holds the lock until it next hears from the cluster, while the next waiter runs; nothing was done",
		e.R.Lock, h.Token, who, int64(h.Lease), h.TTL, h.Granted)
}

// ReleaseHolder ends the lock's holder by force: the one whose key has the
// fencing token named (Queue.Entries[0].Token, as status shows it), so
// that a holder that released meanwhile, and any successor, are never
// touched. A holder that looks alive (its lease is kept, and it is not
// proved dead on this host) is released only with evenIfAlive: a stopped
// or wedged process looks alive too, and only the caller can tell.
//
// Its lease is revoked, which deletes its key and tells a waiting
// successor that the lock was lost rather than released (the successor
// then waits its lock-delay, WithLockDelay). Before the revoke, a
// transaction confirms that the key still has the create revision, mod
// revision and lease that were judged; the lease is revoked only when that
// key is the only one it keeps. When the lease also keeps other keys
// (other locks of the same Client), only the key is deleted, under the
// same compare, and those are left alone; its successor then sees a live
// lease and waits no lock-delay. The holder, if it runs on, finds its lock
// lost: its commit writes nothing, and Held.Lost closes.
//
// With dryRun, the holder is judged and nothing is changed.
func (l *Lock) ReleaseHolder(ctx context.Context, token int64, evenIfAlive, dryRun bool) (*Release, error) {
	q, err := l.InspectQueue(ctx)
	if err != nil {
		return nil, err
	}
	if len(q.Entries) == 0 {
		return nil, &HolderChangedError{Lock: l.prefix, Want: token}
	}
	h := q.Entries[0]
	if h.Token != token {
		return nil, &HolderChangedError{Lock: l.prefix, Want: token, Now: &h}
	}
	r := &Release{Lock: l.prefix, Holder: h, Judged: time.Now(), DryRun: dryRun}
	r.Alive = h.TTL > 0 && (h.Meta == nil || h.Verdict.Verdict != liveness.Dead)
	if r.Alive && !evenIfAlive {
		return r, &HolderAliveError{R: r}
	}
	live := h.Lease != clientv3.NoLease && h.TTL > 0
	if live {
		var keys []string
		err := l.c.retry(ctx, "reading the keys of the lease of "+h.Key, func(ctx context.Context) error {
			resp, err := l.c.cli.TimeToLive(ctx, h.Lease, clientv3.WithAttachedKeys())
			if err != nil {
				return err
			}
			keys = keys[:0]
			for _, k := range resp.Keys {
				keys = append(keys, string(k))
			}
			live = resp.TTL > 0
			return nil
		})
		if err != nil {
			return nil, err
		}
		if live && !slices.Contains(keys, h.Key) {
			return nil, &HolderChangedError{Lock: l.prefix, Want: token, During: true}
		}
		for _, k := range keys {
			if k != h.Key {
				r.Others = append(r.Others, k)
			}
		}
	}
	if dryRun {
		return r, nil
	}
	hook.Fire(etcdhook.ReleaseJudged, h.Key)

	// The key as judged: a holder that released it and queued again has a
	// new key (a new name and create revision); a rewritten one has a new
	// mod revision.
	same := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(h.Key), "=", h.Token),
		clientv3.Compare(clientv3.ModRevision(h.Key), "=", h.ModRev),
		clientv3.Compare(clientv3.LeaseValue(h.Key), "=", int64(h.Lease)),
	}
	if !live || len(r.Others) > 0 {
		attempts := 0
		var ok, gone bool
		err := l.c.retry(ctx, "deleting the holder key "+h.Key, func(ctx context.Context) error {
			attempts++
			resp, err := l.c.cli.Txn(ctx).If(same...).Then(clientv3.OpDelete(h.Key)).Else(clientv3.OpGet(h.Key, clientv3.WithKeysOnly())).Commit()
			if err == nil {
				ok, r.Rev = resp.Succeeded, resp.Header.Revision
				gone = !ok && len(resp.Responses[0].GetResponseRange().Kvs) == 0
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		// A delete sent again after an unanswered attempt finds the key
		// gone when the first one applied.
		if !ok && !(gone && attempts > 1) {
			return nil, &HolderChangedError{Lock: l.prefix, Want: token, During: true}
		}
		if !ok {
			r.Rev = 0 // deleted by the attempt whose answer was lost
		}
		r.Deleted = true
		return r, nil
	}
	var still bool
	err = l.c.retry(ctx, "confirming the holder key "+h.Key, func(ctx context.Context) error {
		resp, err := l.c.cli.Txn(ctx).If(same...).Commit()
		if err == nil {
			still = resp.Succeeded
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !still {
		return nil, &HolderChangedError{Lock: l.prefix, Want: token, During: true}
	}
	err = l.c.retry(ctx, fmt.Sprintf("revoking the lease %x of %s", int64(h.Lease), h.Key), func(ctx context.Context) error {
		resp, err := l.c.cli.Revoke(ctx, h.Lease)
		if err == nil {
			r.Rev = resp.Header.Revision
		}
		// Gone already: an earlier attempt revoked it, or it expired.
		if err != nil && rpctypes.ErrorDesc(err) == rpctypes.ErrLeaseNotFound.Error() {
			return nil
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	r.Revoked = true
	return r, nil
}
