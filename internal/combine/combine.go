// Package combine runs the operations that concurrent callers of one
// process submit on one shared resource in batches, each batch under one
// acquisition of the resource, one read and one write (group commit).
//
// It is the generic half of statelock's group commit: leader election,
// batches, one result per caller, cancellation, panics. What a batch does
// with the resource (take a lock, read a file, write it durably, release)
// is the caller's, behind Acquire and Txn.
//
// # How a batch runs
//
// A caller that finds nobody leading becomes the leader and acquires the
// resource with its own context; callers arriving meanwhile queue. Once
// the resource is held, the leader takes every queued caller into its
// batch (itself first, then the others in arrival order), reads the state
// once, and applies the operations one after the other, each to the output
// of the previous one that succeeded. If any operation changed the state,
// the last output is written once (Txn.Commit); otherwise nothing is
// written (Txn.Release). Callers arriving after the batch was formed wait
// for the next one, whose leader is the first of them; it starts
// acquiring as soon as this batch has released the resource (Commit's
// released callback), which may be before this batch's write is durable.
//
// Each operation runs in its own caller's goroutine: the leader hands the
// current state to that goroutine and waits for its answer. So a panic or
// runtime.Goexit in an operation unwinds its own caller, with its own
// stack, and nobody else's; the batch goes on without that operation's
// output (its state is as if the operation had failed), and the resource
// is released as usual. The panic goes on only once the batch is done
// (written or not, the resource given back): a caller that recovers it
// never finds the resource still held by its own batch. When it is the
// leader's own operation that panics, the leader finishes the batch for
// the others (in a deferred call, before its panic goes on).
//
// # What each caller is told
//
//   - An operation that failed: its own error (joined with the release's
//     error, if that failed). Nobody else sees it.
//   - An operation whose output was written, or that changed nothing after
//     an earlier operation of the batch changed the state (it read bytes
//     only that write makes durable): the write's error, nil when the
//     write is done, joined with the release's error. Do returns only once
//     Commit has returned.
//   - An operation that changed nothing before any change in its batch: the
//     release's error (nil).
//   - A caller whose context is done before its operation was handed the
//     state: an error wrapping ErrNotRun and the context's error; its
//     operation never runs. Once its operation has run, the context is no
//     longer looked at: the caller waits for, and is told, the outcome.
//   - The leader, when its acquisition fails (its context, its wait budget,
//     an unusable resource): that error, to the leader alone. Leadership
//     passes to the first caller still queued, which acquires with its own
//     context, so a caller is never failed by another's context or budget.
//   - Every caller of a batch whose Read failed: that error; no operation
//     runs. Every caller still waiting when the batch's Read, Commit or
//     Release panicked: ErrAbandoned.
//
// Not guaranteed: fairness between processes or resources (that is the
// resource's own business), or any order between callers that queue at
// the same instant beyond the order in which they took the group's mutex.
package combine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Op is one caller's operation on the current state cur. It returns the
// next state and changed = true, or changed = false to leave the state as
// it is (next is then ignored), or an error, which leaves the state as it
// is and is returned to this caller alone.
type Op[S any] func(cur S) (next S, changed bool, err error)

// Acquire takes the resource for one batch, waiting as long as ctx and the
// caller's own budget allow. Its error goes to the caller whose Acquire it
// was, alone.
type Acquire[S any] func(ctx context.Context) (Txn[S], error)

// Txn is one acquisition of the resource. Exactly one of Commit and Release
// is called, once, after at most one Read.
type Txn[S any] interface {
	// Read returns the state. An error fails every caller of the batch (it
	// is joined with Release's error) and no operation runs.
	Read() (S, error)
	// Commit writes s and gives the resource back. It calls released (at
	// most once) as soon as the resource is free for the next batch, which
	// may be before the write is durable; Commit itself returns only when
	// the outcome of the write is known. writeErr goes to every caller
	// whose output the write carries; releaseErr to every caller.
	Commit(s S, released func()) (writeErr, releaseErr error)
	// Release gives the resource back without writing. confirm says that
	// some caller is to be told that its operation changed nothing (and
	// nothing before it in the batch did), so the state it read is the
	// state: a Txn whose reads may see state that is not yet durable makes
	// it durable before it returns.
	Release(confirm bool) error
}

// ErrNotRun marks the error of a caller whose context was done before its
// operation was handed the state: the operation never ran. The context's
// error is wrapped as well.
var ErrNotRun = errors.New("the operation was not run")

// ErrAbandoned is the error of the callers of a batch whose Read, Commit or
// Release panicked or called runtime.Goexit: whether their output was
// written is unknown (the Txn is expected to give the resource back on
// its own in that case, as a deferred call).
var ErrAbandoned = errors.New("the batch was abandoned by its leader (its read, write or release panicked); the outcome is unknown")

// Group combines the operations of concurrent callers on one resource. The
// zero value is ready to use. A Group must not be copied after first use.
type Group[S any] struct {
	mu      sync.Mutex
	queue   []*member[S] // waiting for the next batch, in arrival order
	leading bool         // a leader is acquiring, or its batch holds the resource
}

// Member states. A member moves from queued (or leading) to inBatch, then
// running; the moves out of queued and inBatch are compare-and-swaps, so
// that a cancellation and a batch never both take a member.
const (
	stQueued int32 = iota
	stLeading
	stInBatch
	stRunning
	stCancelled
)

type member[S any] struct {
	op    Op[S]
	state atomic.Int32
	ch    chan msg[S] // at most one message is ever pending
}

type msgKind int

const (
	msgLead   msgKind = iota // you lead the next batch
	msgRun                   // run your operation on cur, answer on reply
	msgResult                // your outcome is err
)

type msg[S any] struct {
	kind  msgKind
	cur   S
	reply chan<- answer[S]
	err   error
}

// answer is an operation's outcome, sent from its caller's goroutine to the
// leader. aborted: the operation panicked or called runtime.Goexit.
type answer[S any] struct {
	next    S
	changed bool
	err     error
	aborted bool
}

// Do runs op on the resource, in a batch with other concurrent callers of
// g, and returns its outcome (see the package documentation). acquire is
// used only if this caller leads a batch. If op panics, Do panics with the
// same value in this goroutine, after its batch released the resource.
func (g *Group[S]) Do(ctx context.Context, acquire Acquire[S], op Op[S]) error {
	return g.do(ctx, time.Time{}, nil, acquire, op)
}

// do is Do. A caller that has to queue behind a batch waits until
// deadline at most (none when zero), as if ctx had that deadline with
// cause: the context for it is made only then, not for every caller (a
// caller that leads at once never waits here).
func (g *Group[S]) do(ctx context.Context, deadline time.Time, cause error, acquire Acquire[S], op Op[S]) error {
	m := &member[S]{op: op}
	g.mu.Lock()
	if !g.leading {
		g.leading = true
		m.state.Store(stLeading)
		g.mu.Unlock()
		// A caller that leads at once is sent nothing on m.ch: handOff
		// and a batch write to queued members only.
		return g.lead(ctx, m, acquire)
	}
	m.ch = make(chan msg[S], 1)
	g.queue = append(g.queue, m)
	g.mu.Unlock()

	if !deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadlineCause(ctx, deadline, cause)
		defer cancel()
	}
	done := ctx.Done()
	for {
		select {
		case <-done:
			if m.state.CompareAndSwap(stQueued, stCancelled) || m.state.CompareAndSwap(stInBatch, stCancelled) {
				return fmt.Errorf("%w: %w", ErrNotRun, context.Cause(ctx))
			}
			// Chosen to lead (its acquisition will see ctx), or the state
			// is already on its way: from here on, the outcome is waited for.
			done = nil
		case ms := <-m.ch:
			switch ms.kind {
			case msgLead:
				return g.lead(ctx, m, acquire)
			case msgRun:
				m.run(ms.cur, ms.reply)
			case msgResult:
				return ms.err
			}
		}
	}
}

// run calls the operation in its caller's goroutine and answers the leader.
// If the operation panics or calls runtime.Goexit, the deferred answer tells
// the leader so, waits until the batch is done (the resource given back),
// and the panic goes on up this caller's own stack.
func (m *member[S]) run(cur S, reply chan<- answer[S]) {
	ok := false
	defer func() {
		if !ok {
			reply <- answer[S]{aborted: true}
			<-m.ch // the batch's end (msgResult), whatever it says
		}
	}()
	next, changed, err := m.op(cur)
	ok = true
	reply <- answer[S]{next: next, changed: changed, err: err}
}

// handOff gives leadership to the first caller still queued, or ends it.
// Called once per leader, when its acquisition failed or its batch has
// released the resource.
func (g *Group[S]) handOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.queue) > 0 {
		next := g.queue[0]
		g.queue[0] = nil
		g.queue = g.queue[1:]
		if next.state.CompareAndSwap(stQueued, stLeading) {
			next.ch <- msg[S]{kind: msgLead}
			return
		}
	}
	g.queue = nil
	g.leading = false
}

// queued reports how many callers wait for the next batch (tests).
func (g *Group[S]) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, m := range g.queue {
		if m.state.Load() == stQueued {
			n++
		}
	}
	return n
}

// lead acquires the resource with the leader's own context and runs one
// batch. A failed acquisition is the leader's alone: leadership passes on.
func (g *Group[S]) lead(ctx context.Context, self *member[S], acquire Acquire[S]) error {
	acquired := false
	defer func() {
		if !acquired {
			// acquire panicked or called runtime.Goexit: the queue must
			// not wait for a leader that is gone.
			g.handOff()
		}
	}()
	txn, err := acquire(ctx)
	if err != nil {
		acquired = true // handed off here, not by the deferred call
		g.handOff()
		return err
	}
	acquired = true
	b := &batch[S]{g: g, txn: txn}
	// A batch of the leader alone (every uncontended caller) keeps its
	// member and outcome in the batch itself, and needs no reply channel
	// (only other members answer on it).
	b.members = append(b.one[:0], self)
	g.mu.Lock()
	for _, m := range g.queue {
		if m.state.CompareAndSwap(stQueued, stInBatch) {
			b.members = append(b.members, m)
		}
	}
	g.queue = nil
	g.mu.Unlock()
	if len(b.members) == 1 {
		b.outcome = b.oneOutcome[:]
	} else {
		b.outcome = make([]outcome, len(b.members))
		b.reply = make(chan answer[S], 1)
	}
	return b.run()
}
