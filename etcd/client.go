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
	// attemptTimeout bounds one request to one member; a request that has
	// no answer by then is sent again (or, for a commit, resolved).
	attemptTimeout = 1 * time.Second
)

type config struct {
	ttl       time.Duration
	wait      time.Duration
	opTimeout time.Duration
	host      *liveness.HostIdentity
	root      string
}

// Option configures a Client.
type Option func(*config)

// WithTTL sets the session lease's TTL (whole seconds; the server raises
// values below its minimum, about 2 s with default timing).
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithWait sets how long Lock waits for a holder before failing with an
// error matching locker.ErrLocked. Zero means one attempt, like TryLock.
func WithWait(d time.Duration) Option { return func(c *config) { c.wait = d } }

// WithOpTimeout bounds each step of a lock call, retries included.
func WithOpTimeout(d time.Duration) Option { return func(c *config) { c.opTimeout = d } }

// WithHostIdentity names this host in holder metadata with h instead of the
// identity loaded from the config root (liveness.LoadHostIdentity).
func WithHostIdentity(h liveness.HostIdentity) Option { return func(c *config) { c.host = &h } }

// WithConfigRoot names the directory holding machine-identity.secret, the
// source of the host id in holder metadata.
func WithConfigRoot(dir string) Option { return func(c *config) { c.root = dir } }

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
}

// NewClient prepares locks on the cluster cli talks to. The host identity
// comes from WithHostIdentity or the config root; if neither can be had,
// holder metadata carries no host id, and no holder is ever judged dead
// (status and recover then leave it to its lease).
func NewClient(cli *clientv3.Client, opts ...Option) *Client {
	c := &Client{cli: cli, cfg: config{ttl: DefaultTTL, wait: DefaultWait, opTimeout: DefaultOpTimeout}}
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
	ctx, cancel := context.WithTimeout(ctx, c.cfg.opTimeout)
	defer cancel()
	delay := 20 * time.Millisecond
	var cause error // the last error that says more than "deadline exceeded"
	for attempt := 1; ; attempt++ {
		actx, acancel := context.WithTimeout(ctx, attemptTimeout)
		err := op(actx)
		acancel()
		if err == nil {
			return nil
		}
		if informative(err) || cause == nil {
			cause = err
		}
		if !transient(err) || ctx.Err() != nil {
			return c.stepError(ctx, what, attempt, cause)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return c.stepError(ctx, what, attempt, cause)
		case <-t.C:
		}
		delay = min(2*delay, 300*time.Millisecond)
	}
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
	return fmt.Sprintf("%s: no answer from etcd at %s after %d attempts: %v", e.Step, e.Endpoints, e.Attempts, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }
