package statelock

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/combine"
	"github.com/exactfs/exactfs/liveness"
)

// Group commit (SPEC §4.6): concurrent Updates of one state file in one
// process share one acquisition, one read and one durable write. The
// mechanism (leader, batches, one answer per caller, cancellation, panics)
// is internal/combine's; this file is what a batch does with the lock.

// groups holds one combine.Group per state file and configuration in use.
var groups combine.Map[groupKey, []byte]

// groupKey says which Updates may share a batch: the same state file, by
// its absolute, cleaned path, and the same options, except the wait budget
// (each caller's own) and WithAllowEmpty (checked per function).
//
// The path is a conservative key. At any instant it names one file, and
// every member of a batch was waiting while the leader opened it, so each
// member's update takes effect within its own call, on the file its path
// named then. Two spellings of one file (a symlinked directory, a bind
// mount) give two groups that never share a batch; they exclude each
// other through the on-disk lock as any two processes do.
type groupKey struct {
	path            string
	configRoot      string
	host            liveness.HostIdentity
	hostSet         bool
	hostLocal       bool
	holdThroughSync bool
	makeDir         bool
}

// updateGroup is one caller's view of its group.
type updateGroup struct {
	key       groupKey
	stateFile string
	cfg       *config
	budget    time.Duration // WaitForever: until ctx is done
	start     time.Time
}

// joinGroup says whether this Update goes through its group: not when
// WithGroupCommit(false) says so, nor for one attempt (WithWait of zero or
// less: a caller that will not wait must not wait behind this process's
// own callers either), nor with a test prober (not comparable).
func joinGroup(ctx context.Context, stateFile string, c *config) (*updateGroup, bool) {
	if c.noGroup || c.probe != nil {
		return nil, false
	}
	budget := c.wait
	if _, ok := ctx.Deadline(); ok && !c.waitSet {
		budget = WaitForever // the deadline ends the wait
	}
	if budget <= 0 {
		return nil, false
	}
	abs, err := filepath.Abs(stateFile)
	if err != nil {
		return nil, false
	}
	k := groupKey{
		path:            abs,
		configRoot:      c.configRoot,
		hostLocal:       c.hostLocal,
		holdThroughSync: c.holdThroughSync,
		makeDir:         c.makeDir,
	}
	if c.host != nil {
		k.host, k.hostSet = *c.host, true
	}
	return &updateGroup{key: k, stateFile: stateFile, cfg: c, budget: budget, start: time.Now()}, true
}

// errQueueBudget is the cause of the context that ends a caller's wait in
// its group's queue when its wait budget runs out.
var errQueueBudget = errors.New("the wait budget ran out behind other Updates of this process")

func (g *updateGroup) update(ctx context.Context, fn func(old []byte) ([]byte, error)) error {
	// The wait in the queue ends with the budget (errQueueBudget). Its
	// timer is made only for a caller that has to queue (combine's
	// DoWithin), not for one that leads at once: that one's wait is its
	// acquisition's, bounded below by what is left of the same budget.
	var deadline time.Time
	if g.budget != WaitForever {
		deadline = g.start.Add(g.budget)
	}
	acquire := func(context.Context) (combine.Txn[[]byte], error) {
		// The leader takes the lock as its own Update would, with its own
		// context and what is left of its own budget: a failure here is
		// its own, and the next caller in the queue leads with its own.
		// g.cfg is this caller's options applied (Update's newConfig);
		// the budget left is set on a copy, as a WithWait appended to
		// the options would set it, without applying them again.
		c := *g.cfg
		if g.budget != WaitForever {
			c.wait, c.waitSet = max(g.budget-time.Since(g.start), 0), true
		}
		h, err := lockStateWith(ctx, g.stateFile, c)
		if err != nil {
			return nil, err
		}
		return &groupTxn{h: h}, nil
	}
	op := func(cur []byte) ([]byte, bool, error) {
		// Each function gets its own copy: one that edits old in place must
		// not edit the output of the caller before it.
		next, err := fn(bytes.Clone(cur))
		switch {
		case errors.Is(err, ErrNoChange):
			return nil, false, nil
		case err != nil:
			return nil, false, err
		case len(next) == 0 && !g.cfg.allowEmpty:
			return nil, false, emptyResult(g.stateFile)
		}
		return next, true, nil
	}
	err := groups.DoWithin(ctx, g.key, deadline, errQueueBudget, acquire, op)
	if errors.Is(err, combine.ErrNotRun) {
		// Never ran: as a Lock that gave up waiting would say it.
		lockPath := g.stateFile + lockSuffix
		holder := "earlier Updates of this process (group commit)"
		if errors.Is(err, errQueueBudget) && ctx.Err() == nil {
			return lockError(lockPath, ReasonAcquireTimeout, 0, time.Since(g.start), holder, nil)
		}
		return lockError(lockPath, ReasonAcquireTimeout, 0, time.Since(g.start), holder, context.Cause(ctx))
	}
	return err
}

// groupTxn is one batch's hold of the lock.
type groupTxn struct {
	h    *Held
	perm fs.FileMode
	prev exactfs.Identity // the state file's capture by Read (zero: absent)
}

func (t *groupTxn) Read() ([]byte, error) {
	old, perm, id, err := readState(t.h.l.dir, t.h.l.base)
	t.perm, t.prev = perm, id
	return old, err
}

func (t *groupTxn) Commit(next []byte, released func()) (writeErr, releaseErr error) {
	return t.h.writeAndRelease(func(wopts ...exactfs.WriteOption) error {
		// The old file's mode, kept exactly, as a lone Update keeps it.
		_, err := t.h.l.dir.WriteFile(t.h.l.base, next, t.perm, append(wopts, exactfs.ExactPerm(), exactfs.Predecessor(t.prev), exactfs.DirOwnerForNewFile())...)
		return err
	}, released)
}

func (t *groupTxn) Release(confirm bool) error {
	// Nothing was written: every caller of the batch is told something
	// (ErrNoChange's nil, or its own fn's error) that may rest on the bytes
	// read, so they are made durable first, as a lone Update does (the
	// readers' rule, SPEC §4.6); confirm does not change that.
	return errors.Join(t.h.readDurable(), t.h.Unlock())
}
