package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/locker"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"google.golang.org/grpc/status"
)

// Defaults.
const (
	// DefaultTTL is the session lease's time to live: how long a holder
	// that stopped sending keepalives (paused, partitioned, killed) keeps
	// the lock before the server takes it away.
	DefaultTTL = 10 * time.Second
	// DefaultWait is how long Lock waits for a holder, as statelock's.
	DefaultWait = 5 * time.Second
	// DefaultOpTimeout bounds each step (queueing, reading, committing,
	// releasing) including its retries across a leader change or a dead
	// member.
	DefaultOpTimeout = 10 * time.Second
	// DefaultStepDownMargin is how long before its lease can expire a
	// holder watching Lost steps down: Lost closes once no keepalive has
	// been confirmed for TTL minus this margin (counted from the moment the
	// last confirmed keepalive was sent, which is before the server renewed
	// the lease, so the server's expiry is never earlier).
	DefaultStepDownMargin = 1 * time.Second
	// attemptTimeout is the first attempt's share of a step's budget: a
	// request with no answer by then is sent again, most likely to another
	// member (or, for a commit, resolved). Each later attempt of the step
	// gets twice the time of the one before, up to what is left of the
	// step's budget, so that a path on which one request takes longer than
	// this (a slow link, a leader in a slow fsync) still succeeds within
	// the budget, while a dead member costs the first attempt only.
	attemptTimeout = 1 * time.Second
)

type config struct {
	margin    time.Duration
	lockDelay time.Duration
	ttl       time.Duration
	wait      time.Duration
	opTimeout time.Duration
	host      *liveness.HostIdentity
	root      string
	// allowEmpty lets Update write an empty value (WithAllowEmpty).
	allowEmpty bool
}

// Option configures a Client.
type Option func(*config)

// WithTTL sets the session lease's TTL (whole seconds; the server raises
// values below its minimum, about 2 s with default timing).
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithWait sets how long Lock waits for a holder before failing with an
// error matching locker.ErrLocked. Zero means one attempt, like TryLock;
// WaitForever waits as long as it takes.
func WithWait(d time.Duration) Option { return func(c *config) { c.wait = d } }

// WithOpTimeout bounds each step of a lock call, retries included.
func WithOpTimeout(d time.Duration) Option { return func(c *config) { c.opTimeout = d } }

// WithStepDownMargin sets how long before its lease can expire a holder's
// Lost channel closes (DefaultStepDownMargin). A holder acting outside
// etcd (lock -- CMD) must have stopped by then.
func WithStepDownMargin(d time.Duration) Option { return func(c *config) { c.margin = d } }

// WithLockDelay makes a lock call that waited, and whose predecessor's
// key went away with its lease (expired or revoked: the predecessor was
// paused, cut off or killed, not released), wait d more before returning
// the lock, so that what the lost holder had in flight lands first (the
// lock-delay of Chubby and Consul). Zero (the default) waits nothing.
func WithLockDelay(d time.Duration) Option { return func(c *config) { c.lockDelay = d } }

// WithHostIdentity names this host in holder metadata with h instead of the
// identity loaded from the config root (liveness.LoadHostIdentity).
func WithHostIdentity(h liveness.HostIdentity) Option { return func(c *config) { c.host = &h } }

// WithConfigRoot names the directory holding machine-identity.secret, the
// source of the host id in holder metadata.
func WithConfigRoot(dir string) Option { return func(c *config) { c.root = dir } }

// WithAllowEmpty lets Update commit an empty value when its function
// returns no bytes. Without it such an Update writes nothing and fails
// with an error satisfying errors.Is(err, statelock.ErrEmptyResult), as
// the file backend does: an empty result is nearly always a bug that
// would wipe the state. (The CLI's --allow-empty.)
func WithAllowEmpty(on bool) Option { return func(c *config) { c.allowEmpty = on } }

// Client takes exactfs locks on one etcd cluster. It shares one session
// lease among the locks it holds, granting a new one when the old one
// expired. Close it to revoke the lease.
type Client struct {
	cli   *clientv3.Client
	cfg   config
	host  liveness.HostIdentity
	self  liveness.Evidence
	name  string // os.Hostname, for people
	seq   atomic.Uint64
	mu    sync.Mutex
	sess  *concurrency.Session
	close bool
	// stranded holds queue keys of ours whose removal failed (the
	// cluster did not answer in time after a cancelled or failed lock
	// call). They are bound to the shared session lease, which outlives
	// the call, so the next lock call deletes them before queueing.
	stranded map[string]struct{}
	// slow is the longest recent successful request, in nanoseconds: the
	// first attempt of a step gets at least three times that.
	slow atomic.Int64
}

// NewClient prepares locks on the cluster cli talks to. The host identity
// comes from WithHostIdentity or the config root; if neither can be had,
// holder metadata carries no host id, and no holder is ever judged dead
// (status and recover then leave it to its lease).
func NewClient(cli *clientv3.Client, opts ...Option) *Client {
	c := &Client{cli: cli, cfg: config{ttl: DefaultTTL, wait: DefaultWait, opTimeout: DefaultOpTimeout, margin: DefaultStepDownMargin}}
	for _, o := range opts {
		o(&c.cfg)
	}
	if c.cfg.opTimeout <= 0 {
		c.cfg.opTimeout = DefaultOpTimeout
	}
	if c.cfg.host != nil {
		c.host = *c.cfg.host
	} else if root := c.cfg.root; root != "" {
		c.host, _ = liveness.LoadHostIdentity(root)
	} else if root, err := liveness.DefaultConfigRoot(); err == nil {
		c.host, _ = liveness.LoadHostIdentity(root)
	}
	c.self, _ = liveness.Self()
	if c.self.Pid == 0 {
		c.self.Pid = os.Getpid()
	}
	c.name, _ = os.Hostname()
	return c
}

// Etcd returns the underlying etcd client.
func (c *Client) Etcd() *clientv3.Client { return c.cli }

// Close revokes the session lease: every lock still held through this
// client is released by the server. It does not close the etcd client.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.close = true
	if c.sess == nil {
		return nil
	}
	s := c.sess
	c.sess = nil
	s.Orphan()
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.opTimeout)
	defer cancel()
	_, err := c.cli.Revoke(ctx, s.Lease())
	return err
}

// Detach stops this client's keepalive without revoking its session
// lease, which lapses after its TTL. Call it instead of Close after every
// lock was released cleanly: a successor that uses WithLockDelay tells a
// released predecessor (lease still alive) from a lost one (lease gone),
// and a revoked lease would look lost. Do not call it while holding a
// lock: the lock would stay held until the lease lapses.
func (c *Client) Detach() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.close = true
	if c.sess != nil {
		c.sess.Orphan()
		c.sess = nil
	}
}

// session returns a live session lease, granting one if there is none or
// the last one expired.
func (c *Client) session(ctx context.Context) (*concurrency.Session, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.close {
		return nil, errors.New("the exactfs etcd client is closed")
	}
	if c.sess != nil {
		select {
		case <-c.sess.Done():
			c.sess = nil
		default:
			return c.sess, nil
		}
	}
	ttl := int64(c.cfg.ttl.Round(time.Second) / time.Second)
	if ttl < 1 {
		ttl = 1
	}
	var id clientv3.LeaseID
	err := c.retry(ctx, "granting a session lease", func(ctx context.Context) error {
		resp, err := c.cli.Grant(ctx, ttl)
		if err == nil {
			id = resp.ID
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	// The keepalive runs until Close (or the lease is found expired), not
	// just for this call.
	s, err := concurrency.NewSession(c.cli, concurrency.WithLease(id), concurrency.WithTTL(int(ttl)), concurrency.WithContext(context.WithoutCancel(c.cli.Ctx())))
	if err != nil {
		return nil, fmt.Errorf("starting the keepalive of lease %x: %w", int64(id), err)
	}
	c.sess = s
	return s, nil
}

// forget drops s, whose lease the server no longer knows, so that the
// next lock call grants a new one.
func (c *Client) forget(s *concurrency.Session) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == s {
		c.sess = nil
		s.Orphan()
	}
}

// remove deletes one of our queue keys whose fate is unknown (an attempt
// to put it got no answer), whatever its revision: its name is unique to
// one acquisition, so it can only be ours. If the cluster does not answer,
// the next lock call tries again.
func (c *Client) remove(key string) {
	err := c.retry(context.Background(), "taking "+key+" out of its queue", func(ctx context.Context) error {
		_, err := c.cli.Delete(ctx, key)
		return err
	})
	if err != nil {
		c.strand(key)
	}
}

// strand records a queue key of ours that could not be deleted.
func (c *Client) strand(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stranded == nil {
		c.stranded = map[string]struct{}{}
	}
	c.stranded[key] = struct{}{}
}

// sweep deletes the queue keys earlier calls could not (strand), in one
// transaction, before a lock call queues: bound to the shared lease, they
// would otherwise hold their queues, this client's own calls included.
func (c *Client) sweep(ctx context.Context) {
	c.mu.Lock()
	var ops []clientv3.Op
	var keys []string
	for k := range c.stranded {
		ops = append(ops, clientv3.OpDelete(k))
		keys = append(keys, k)
	}
	c.mu.Unlock()
	if len(ops) == 0 {
		return
	}
	err := c.retry(ctx, "deleting queue keys left by cancelled calls", func(ctx context.Context) error {
		_, err := c.cli.Txn(ctx).Then(ops...).Commit()
		return err
	})
	if err != nil {
		return
	}
	c.mu.Lock()
	for _, k := range keys {
		delete(c.stranded, k)
	}
	c.mu.Unlock()
}

// Locker returns the lock of the state key key. The key must not be empty
// and must not end in "/".
func (c *Client) Locker(key string) *Lock {
	return &Lock{c: c, key: key, prefix: key + LockSuffix}
}

// LockSuffix is appended to a state key to name the prefix of its lock
// queue.
const LockSuffix = ".lock/"

var _ locker.Locker = (*Lock)(nil)

// retry runs op until it succeeds, fails for good, or the step's budget
// (WithOpTimeout, and ctx) runs out. Only operations that may be applied
// twice without harm go through it: reads, and transactions whose compares
// make a second application a no-op.
func (c *Client) retry(ctx context.Context, what string, op func(ctx context.Context) error) error {
	return c.retryUntil(ctx, ctx, what, op)
}

// retryUntil is retry whose attempts run under ctx, but which sends no new
// attempt once caller ends. An attempt already sent is let finish (it
// is bounded by its share of the budget), so the caller learns whether it
// applied: queueing uses this so that a caller cancelled while its queue
// key is being put knows that key and can delete it.
func (c *Client) retryUntil(ctx, caller context.Context, what string, op func(ctx context.Context) error) error {
	stop := caller.Done()
	ctx, cancel := context.WithTimeout(ctx, c.cfg.opTimeout)
	defer cancel()
	delay := 20 * time.Millisecond
	per := c.firstAttempt()
	var cause error // the last error that says more than "deadline exceeded"
	for attempt := 1; ; attempt++ {
		select {
		case <-stop:
			return c.stopped(what, attempt-1, cause, caller)
		default:
		}
		actx, acancel := context.WithTimeout(ctx, per)
		t0 := time.Now()
		err := op(actx)
		acancel()
		if err == nil {
			c.observe(time.Since(t0))
			return nil
		}
		if informative(err) || cause == nil {
			cause = err
		}
		if !transient(err) || ctx.Err() != nil {
			if caller.Err() != nil {
				return c.stopped(what, attempt, cause, caller)
			}
			return c.stepError(ctx, what, attempt, cause)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			if caller.Err() != nil {
				return c.stopped(what, attempt, cause, caller)
			}
			return c.stepError(ctx, what, attempt, cause)
		case <-stop:
			t.Stop()
			return c.stopped(what, attempt, cause, caller)
		case <-t.C:
		}
		delay = min(2*delay, 300*time.Millisecond)
		per *= 2
	}
}

// firstAttempt is the time the first attempt of a step gets.
func (c *Client) firstAttempt() time.Duration {
	return max(attemptTimeout, 3*time.Duration(c.slow.Load()))
}

// observe remembers how long a successful request took: the longest of
// the recent ones, decaying so that one slow moment is forgotten.
func (c *Client) observe(d time.Duration) {
	for {
		old := c.slow.Load()
		next := max(int64(d), old-old/8)
		if c.slow.CompareAndSwap(old, next) {
			return
		}
	}
}

// stopped is the error of a step whose caller went away (its context was
// cancelled or its deadline passed): it says so, rather than blaming the
// cluster.
func (c *Client) stopped(what string, attempts int, cause error, caller context.Context) error {
	err := caller.Err()
	if cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return fmt.Errorf("%s: the caller gave up (%w) after %d attempts; the last error: %v", what, err, attempts, cause)
	}
	return fmt.Errorf("%s: the caller gave up: %w", what, err)
}

// informative says whether err tells more than that time ran out: a
// refused connection, a certificate the client does not trust, no leader.
func informative(err error) bool {
	if s, ok := status.FromError(err); ok {
		return s.Message() != context.DeadlineExceeded.Error()
	}
	return !errors.Is(err, context.DeadlineExceeded)
}

// stepError says which step failed, against which endpoints, and why.
func (c *Client) stepError(ctx context.Context, what string, attempts int, err error) error {
	eps := strings.Join(c.cli.Endpoints(), ",")
	if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return &UnavailableError{Step: what, Endpoints: eps, Attempts: attempts, Err: err}
	}
	return fmt.Errorf("%s (etcd %s): %w", what, eps, err)
}

// UnavailableError reports that the cluster did not answer a step within
// its budget.
type UnavailableError struct {
	Step      string
	Endpoints string
	Attempts  int
	Err       error
}

func (e *UnavailableError) Error() string {
	if e.Attempts == 0 {
		return fmt.Sprintf("%s: no answer from etcd at %s: %v", e.Step, e.Endpoints, e.Err)
	}
	return fmt.Sprintf("%s: no answer from etcd at %s after %d attempts: %v", e.Step, e.Endpoints, e.Attempts, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }
