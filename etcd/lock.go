package etcd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/exactfs/exactfs/etcd/internal/etcdhook"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/locker"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Lock is the lock of one state key. It satisfies locker.Locker.
type Lock struct {
	c      *Client
	key    string // the state key
	prefix string // key + LockSuffix
}

// Key returns the state key.
func (l *Lock) Key() string { return l.key }

// Prefix returns the prefix of the lock's queue.
func (l *Lock) Prefix() string { return l.prefix }

// Held is one acquisition of a Lock. It satisfies locker.Lease.
type Held struct {
	l        *Lock
	sess     *concurrency.Session
	myKey    string
	rev      int64 // create revision of myKey: the fencing token
	acquired int64 // the revision at which we were first in the queue

	// what Update read with the acquisition
	state    []byte
	stateRev int64 // mod revision of the state key, 0 when absent

	predLease int64         // the lease of the last key we waited for, 0 if none
	delayed   time.Duration // the lock-delay waited

	mu       sync.Mutex
	lost     chan struct{}
	lostErr  error
	stop     context.CancelFunc // ends the Lost watcher
	released bool
}

// LockError is a failure to acquire: contention (matches locker.ErrLocked)
// or a lease lost while waiting (matches locker.ErrLost).
type LockError struct {
	Key     string        // the lock's queue prefix
	Holder  *Meta         // who held the lock, when known
	Token   int64         // the holder's fencing token, when known
	Elapsed time.Duration // time spent
	Err     error         // locker.ErrLocked, locker.ErrLost, or the cause
}

func (e *LockError) Error() string {
	switch {
	case errors.Is(e.Err, locker.ErrLocked) && e.Holder != nil:
		return fmt.Sprintf("%s: held by %s (token %d), gave up after %s", e.Key, e.Holder.Describe(), e.Token, e.Elapsed.Round(time.Millisecond))
	case errors.Is(e.Err, locker.ErrLocked):
		return fmt.Sprintf("%s: held by someone else, gave up after %s", e.Key, e.Elapsed.Round(time.Millisecond))
	}
	return fmt.Sprintf("%s: %v", e.Key, e.Err)
}

func (e *LockError) Unwrap() error { return e.Err }

// LostError says that a holder's lock key was gone when it meant to write
// or release: its lease expired or was revoked, or the key was deleted. It
// matches locker.ErrLost.
type LostError struct {
	Key   string // the holder's lock key
	Token int64
	Op    string // "commit", "unlock", "hold", "wait"
	Why   string
}

func (e *LostError) Error() string {
	what := "nothing was written"
	if e.Op != "commit" {
		what = "another holder may have taken it since"
	}
	when := "before the " + e.Op
	switch e.Op {
	case "hold":
		when = "while held"
	case "wait":
		when = "while waiting for it"
	}
	return fmt.Sprintf("the lock %s (token %d) was lost %s: %s; %s", e.Key, e.Token, when, e.Why, what)
}

func (e *LostError) Unwrap() error { return locker.ErrLost }

// ErrStateChanged reports a commit refused because the state key was
// written, while we held the lock, by someone who does not take it.
var ErrStateChanged = errors.New("the state key was changed by a writer that does not take the lock")

func (l *Lock) Lock(ctx context.Context) (locker.Lease, error) {
	h, err := l.acquire(ctx, l.c.cfg.wait)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func (l *Lock) TryLock(ctx context.Context) (locker.Lease, error) {
	h, err := l.acquire(ctx, 0)
	if err != nil {
		return nil, err
	}
	return h, nil
}

// Acquire is Lock with an explicit wait budget (0: one attempt), returning
// the concrete lease.
func (l *Lock) Acquire(ctx context.Context, wait time.Duration) (*Held, error) {
	return l.acquire(ctx, wait)
}

// WaitForever, given to WithWait or Acquire, waits for the lock as long as
// it takes (each request still has its budget, WithOpTimeout).
const WaitForever time.Duration = -1

// maxRequeues bounds how often one call joins the queue again after its
// session lease expired while it waited.
const maxRequeues = 3

// acquire queues our key, and waits until it is first, up to wait. The
// state key is read in the transaction that finds us first, for Update.
//
// A waiter whose lease expired while it waited (it was paused, or cut off
// from the cluster longer than the TTL) never held the lock and ran
// nothing: it joins the queue again, at its end, with a new lease, while
// its wait budget lasts.
func (l *Lock) acquire(ctx context.Context, wait time.Duration) (*Held, error) {
	if err := CheckKey(l.key); err != nil {
		return nil, err
	}
	start := time.Now()
	deadline := start.Add(wait)
	if wait < 0 {
		deadline = start.Add(100 * 365 * 24 * time.Hour)
	}
	for requeues := 0; ; requeues++ {
		h, err := l.acquireOnce(ctx, wait, start, deadline)
		var lost *LostError
		if err != nil && errors.As(err, &lost) && lost.Op == "wait" && wait != 0 &&
			requeues < maxRequeues && ctx.Err() == nil && time.Now().Before(deadline) {
			continue
		}
		return h, err
	}
}

func (l *Lock) acquireOnce(ctx context.Context, wait time.Duration, start, deadline time.Time) (*Held, error) {
	var h *Held
	var resp *clientv3.TxnResponse
	l.c.sweep(ctx)
	for try := 0; ; try++ {
		sess, err := l.c.session(ctx)
		if err != nil {
			return nil, err
		}
		h = &Held{l: l, sess: sess, myKey: fmt.Sprintf("%s%016x-%d", l.prefix, int64(sess.Lease()), l.c.seq.Add(1))}
		var sent bool
		resp, sent, err = l.queue(ctx, h)
		if err == nil {
			break
		}
		// Our shared session lease expired between two lock calls before
		// its keepalive noticed: start a new one, once.
		if try == 0 && errors.Is(err, rpctypes.ErrLeaseNotFound) {
			l.c.forget(sess)
			continue
		}
		if sent {
			// An attempt that got no answer may have put our key: take
			// it out, or it would hold the queue for as long as the
			// shared lease lives.
			l.c.remove(h.myKey)
		}
		return nil, err
	}

	if resp.Succeeded {
		h.rev = resp.Header.Revision
	} else if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		h.rev = kvs[0].CreateRevision
	} else {
		return nil, &LockError{Key: l.prefix, Elapsed: time.Since(start), Err: &LostError{Key: h.myKey, Op: "wait", Why: "our queue key vanished as it was put (the session lease expired)"}}
	}
	if err := ctx.Err(); err != nil {
		// The caller went away while our key was being put: it is in the
		// queue, and only we know it.
		l.dequeue(h)
		return nil, fmt.Errorf("queueing for the lock %s: the caller gave up: %w", l.prefix, err)
	}
	first := resp.Responses[1].GetResponseRange().Kvs
	if len(first) == 1 && first[0].CreateRevision == h.rev {
		h.acquired = resp.Header.Revision
		h.setState(resp.Responses[2].GetResponseRange().Kvs)
		return h, nil
	}
	if len(first) == 1 {
		// The holder when we queued. Should its key be gone before our
		// first look (waitTurn then sees nobody ahead), it is still the
		// predecessor whose lease decides the lock-delay.
		h.predLease = first[0].Lease
	}

	// Someone is ahead of us.
	for {
		if wait == 0 || !time.Now().Before(deadline) {
			return nil, l.giveUp(h, start, first)
		}
		pred, err := l.waitTurn(ctx, h, deadline)
		if err != nil {
			l.dequeue(h)
			var le *LockError
			if errors.As(err, &le) {
				le.Elapsed = time.Since(start)
				return nil, le
			}
			return nil, err
		}
		if pred == nil {
			if err := l.lockDelay(ctx, h); err != nil {
				l.dequeue(h)
				return nil, err
			}
			return h, nil
		}
		first = pred
	}
}

// queue puts our key unless a previous attempt of this very call did. The
// first key in the queue (and the state) is read in the same transaction,
// so an uncontended lock (or Update) costs one round trip.
//
// An attempt is not cut short when ctx ends: the caller must learn whether
// its key went in, so that it can take it out. No attempt is sent after
// ctx ends. sent says whether any attempt was sent.
func (l *Lock) queue(ctx context.Context, h *Held) (resp *clientv3.TxnResponse, sent bool, err error) {
	val := l.c.meta().encode()
	cli := l.c.cli
	sess := h.sess
	err = l.c.retryUntil(context.WithoutCancel(ctx), ctx, "queueing for the lock "+l.prefix, func(actx context.Context) error {
		sent = true
		r, err := cli.Txn(actx).
			If(clientv3.Compare(clientv3.CreateRevision(h.myKey), "=", 0)).
			Then(clientv3.OpPut(h.myKey, string(val), clientv3.WithLease(sess.Lease())),
				clientv3.OpGet(l.prefix, clientv3.WithFirstCreate()...),
				clientv3.OpGet(l.key)).
			Else(clientv3.OpGet(h.myKey),
				clientv3.OpGet(l.prefix, clientv3.WithFirstCreate()...),
				clientv3.OpGet(l.key)).
			Commit()
		resp = r
		if err == nil {
			hook.Fire(etcdhook.QueueAnswered, h.myKey)
		}
		return err
	})
	if err != nil {
		return nil, sent, err
	}
	return resp, sent, nil
}

// waitTurn looks for the key just ahead of ours; if there is none we hold
// the lock (and h has the state read with that look), and waitTurn returns
// nil. Otherwise it waits for that key's deletion (or the deadline) and
// returns the key it saw.
func (l *Lock) waitTurn(ctx context.Context, h *Held, deadline time.Time) ([]*mvccpb.KeyValue, error) {
	cli := l.c.cli
	var resp *clientv3.TxnResponse
	hook.Fire(etcdhook.WaitLook, h.myKey)
	err := l.c.retry(ctx, "waiting for the lock "+l.prefix, func(ctx context.Context) error {
		r, err := cli.Txn(ctx).Then(
			clientv3.OpGet(h.myKey),
			clientv3.OpGet(l.prefix, append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(h.rev-1))...),
			clientv3.OpGet(l.key)).Commit()
		resp = r
		return err
	})
	if err != nil {
		return nil, err
	}
	mine := resp.Responses[0].GetResponseRange().Kvs
	if len(mine) != 1 || mine[0].CreateRevision != h.rev {
		return nil, &LockError{Key: l.prefix, Err: &LostError{Key: h.myKey, Token: h.rev, Op: "wait", Why: "our queue key was deleted while we waited (the session lease expired)"}}
	}
	pred := resp.Responses[1].GetResponseRange().Kvs
	if len(pred) == 1 {
		h.predLease = pred[0].Lease
	}
	if len(pred) == 0 {
		h.acquired = resp.Header.Revision
		h.setState(resp.Responses[2].GetResponseRange().Kvs)
		return nil, nil
	}
	// Wait for the deletion of the key just ahead of ours. A periodic look
	// bounds the wait should a watch stall across a member's death.
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	tick := time.NewTimer(time.Second)
	defer tick.Stop()
	wch := cli.Watch(clientv3.WithRequireLeader(wctx), string(pred[0].Key), clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterPut())
	hook.Fire(etcdhook.WaitWatch, h.myKey)
	for {
		select {
		case wr, ok := <-wch:
			if !ok || wr.Err() != nil || len(wr.Events) > 0 {
				return pred, nil
			}
		case <-tick.C:
			return pred, nil
		case <-h.sess.Done():
			return nil, &LockError{Key: l.prefix, Err: &LostError{Key: h.myKey, Token: h.rev, Op: "wait", Why: "the session lease expired while we waited"}}
		case <-wctx.Done():
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("waiting for the lock %s: the caller gave up: %w", l.prefix, err)
			}
			return pred, nil
		}
	}
}

// lockDelay waits WithLockDelay when the key we last waited for went away
// with its lease: its holder did not release it (it was paused, cut off,
// killed, or revoked by recover), so effects it had in flight may still
// land. A released predecessor's lease is still alive (see Detach).
func (l *Lock) lockDelay(ctx context.Context, h *Held) error {
	d := l.c.cfg.lockDelay
	if d <= 0 || h.predLease == 0 {
		return nil
	}
	var gone bool
	err := l.c.retry(ctx, "reading the lease of our predecessor", func(ctx context.Context) error {
		r, err := l.c.cli.TimeToLive(ctx, clientv3.LeaseID(h.predLease))
		if err == nil {
			gone = r.TTL <= 0
		}
		return err
	})
	if err == nil && !gone {
		return nil
	}
	// Unknown (no answer) counts as gone. The lock is ours already: a
	// deadline that passes now does not shorten the delay, since the
	// caller would use the lock early; a cancellation gives it up.
	h.delayed = d
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			return fmt.Errorf("waiting the lock-delay of %s: the caller gave up: %w", l.prefix, ctx.Err())
		}
		<-t.C
		return nil
	}
}

// Delayed is the lock-delay this acquisition waited (WithLockDelay), zero
// if its predecessor released the lock.
func (h *Held) Delayed() time.Duration { return h.delayed }

// giveUp takes our key out of the queue and reports who held the lock.
func (l *Lock) giveUp(h *Held, start time.Time, holder []*mvccpb.KeyValue) error {
	l.dequeue(h)
	e := &LockError{Key: l.prefix, Elapsed: time.Since(start), Err: locker.ErrLocked}
	if len(holder) == 1 {
		// holder is the key ahead of ours; the holder is the first.
		ctx, cancel := context.WithTimeout(context.Background(), l.c.firstAttempt())
		if r, err := l.c.cli.Get(ctx, l.prefix, clientv3.WithFirstCreate()...); err == nil && len(r.Kvs) == 1 {
			holder = r.Kvs
		}
		cancel()
		if m, err := parseMeta(holder[0].Value); err == nil {
			e.Holder = m
		}
		e.Token = holder[0].CreateRevision
	}
	return e
}

// dequeue deletes our own queue key (only ours: a compare on its create
// revision), so that nobody waits for a contender that gave up. It runs
// with a budget of its own, since the caller's context may be what ended;
// if the cluster does not answer, the key is left to the next lock call of
// this client (Client.sweep), because the shared lease keeps it alive.
func (l *Lock) dequeue(h *Held) {
	err := l.c.retry(context.Background(), "leaving the queue of "+l.prefix, func(ctx context.Context) error {
		_, err := l.c.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(h.myKey), "=", h.rev)).
			Then(clientv3.OpDelete(h.myKey)).Commit()
		return err
	})
	if err != nil {
		l.c.strand(h.myKey)
	}
}

func (h *Held) setState(kvs []*mvccpb.KeyValue) {
	if len(kvs) == 1 {
		h.state, h.stateRev = kvs[0].Value, kvs[0].ModRevision
	}
}

// Token is the fencing token: the create revision of our lock key, in
// decimal. Tokens of successive holders of one lock grow.
func (h *Held) Token() string { return strconv.FormatInt(h.rev, 10) }

// Revision is the fencing token as a number.
func (h *Held) Revision() int64 { return h.rev }

// Acquired is the revision at which this holder was first in the queue.
func (h *Held) Acquired() int64 { return h.acquired }

// Key is our lock key.
func (h *Held) Key() string { return h.myKey }

// Lease is the session lease our key is bound to.
func (h *Held) Lease() clientv3.LeaseID { return h.sess.Lease() }

// Lost is closed when the session lease expires or our lock key is
// deleted by someone else, and also when no renewal of the lease has been
// confirmed for its TTL minus the step-down margin (WithStepDownMargin),
// counted from the moment the last confirmed renewal was sent: the holder
// then stops before the server can give the lock to someone else. Until
// the first renewal is confirmed (one round trip after the first call) the
// count starts at the first call. Watching starts with the first call.
func (h *Held) Lost() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return h.lost
	}
	h.lost = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go h.watchLoss(ctx)
	return h.lost
}

func (h *Held) watchLoss(ctx context.Context) {
	wch := h.l.c.cli.Watch(ctx, h.myKey, clientv3.WithRev(h.rev+1), clientv3.WithFilterPut())
	renewed := make(chan time.Time, 1)
	gone := make(chan struct{})
	go h.renew(ctx, renewed, gone)
	// Until a renewal of ours is confirmed, count from now: the session's
	// keepalive renewed the lease at most a third of the TTL ago when it
	// works, so this errs late by at most that (see Lost).
	confirmed := time.Now()
	ttl := h.l.c.cfg.ttl.Round(time.Second)
	if ttl < time.Second {
		ttl = time.Second
	}
	margin := min(h.l.c.cfg.margin, ttl/2)
	stepDown := time.NewTimer(ttl - margin)
	defer stepDown.Stop()
	why := ""
	for why == "" {
		select {
		case <-ctx.Done():
			return
		case <-h.sess.Done():
			why = "the session lease expired (no keepalive reached the cluster within its TTL)"
		case <-gone:
			why = "the session lease is gone (the server no longer knows it: expired or revoked)"
		case t := <-renewed:
			confirmed = t
			stepDown.Reset(time.Until(t.Add(ttl - margin)))
		case <-stepDown.C:
			why = fmt.Sprintf("no keepalive confirmed for %s (the TTL, %s, minus a margin of %s): stepping down before the lease can expire (was this process paused or cut off from the cluster?)",
				time.Since(confirmed).Round(time.Millisecond), ttl, margin)
		case wr, ok := <-wch:
			switch {
			case !ok:
				if ctx.Err() != nil {
					return
				}
				wch = h.l.c.cli.Watch(ctx, h.myKey, clientv3.WithRev(h.rev+1), clientv3.WithFilterPut())
			case len(wr.Events) > 0:
				why = "our lock key was deleted (lease expired or revoked, or removed by hand)"
			case wr.Err() != nil && errors.Is(wr.Err(), rpctypes.ErrCompacted):
				why = "our lock key's history was compacted away while we held it"
			}
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return
	}
	h.lostErr = &LostError{Key: h.myKey, Token: h.rev, Op: "hold", Why: why}
	close(h.lost)
}

// renew renews our lease every quarter TTL and reports the send time of
// each renewal the server confirmed: the server renewed the lease after
// that moment, so it cannot expire before that moment plus the TTL. The
// session's own keepalive reports no such time. gone is closed when the
// server says the lease does not exist.
func (h *Held) renew(ctx context.Context, renewed chan time.Time, gone chan<- struct{}) {
	every := max(h.l.c.cfg.ttl/4, 250*time.Millisecond)
	for {
		sent := time.Now()
		// An answer that takes up to half the TTL still counts; renewals
		// are not sent in parallel, so a slower one delays the next.
		actx, cancel := context.WithTimeout(ctx, max(every, h.l.c.cfg.ttl/2))
		_, err := h.l.c.cli.KeepAliveOnce(actx, h.sess.Lease())
		cancel()
		switch {
		case err == nil:
			select {
			case <-renewed: // drop an unread older time
			default:
			}
			renewed <- sent
		case errors.Is(err, rpctypes.ErrLeaseNotFound):
			close(gone)
			return
		}
		t := time.NewTimer(time.Until(sent.Add(every)))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

func (h *Held) Err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostErr
}

// Unlock deletes our lock key if it is still ours. If it is gone, the lock
// was lost, and Unlock says so (nothing else is touched).
func (h *Held) Unlock() error {
	h.mu.Lock()
	if h.released {
		h.mu.Unlock()
		return errors.New("exactfs etcd: Unlock called twice")
	}
	h.released = true
	if h.stop != nil {
		h.stop()
	}
	h.mu.Unlock()
	attempts := 0
	gone := false
	err := h.l.c.retry(context.Background(), "releasing the lock "+h.myKey, func(ctx context.Context) error {
		attempts++
		r, err := h.l.c.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(h.myKey), "=", h.rev)).
			Then(clientv3.OpDelete(h.myKey)).Commit()
		if err == nil {
			gone = !r.Succeeded
		}
		return err
	})
	if err != nil {
		// Our key stays bound to the shared lease: the next lock call of
		// this client deletes it (or the lease's end does).
		h.l.c.strand(h.myKey)
		return err
	}
	// A release sent again after an unanswered attempt finds the key gone
	// when the first one applied: it is released either way.
	if gone && attempts == 1 {
		return &LostError{Key: h.myKey, Token: h.rev, Op: "unlock", Why: "our lock key is gone (the session lease expired or was revoked)"}
	}
	return nil
}

// transient says whether a request may succeed if sent again: the member
// is down or unreachable, the leader changed, or the attempt timed out.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	switch rpctypes.ErrorDesc(err) {
	case rpctypes.ErrLeaderChanged.Error(), rpctypes.ErrNoLeader.Error(), rpctypes.ErrTimeout.Error(),
		rpctypes.ErrTimeoutDueToLeaderFail.Error(), rpctypes.ErrTimeoutDueToConnectionLost.Error(),
		rpctypes.ErrTimeoutWaitAppliedIndex.Error(), rpctypes.ErrTooManyRequests.Error(), rpctypes.ErrUnhealthy.Error(),
		rpctypes.ErrNotCapable.Error(), rpctypes.ErrStopped.Error():
		return true
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.ResourceExhausted, codes.Aborted:
			return true
		}
	}
	return false
}
