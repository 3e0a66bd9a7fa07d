package combine

import (
	"errors"
	"slices"
	"sync"
)

type outcomeKind int

const (
	oPending outcomeKind = iota // not run yet
	oSkipped                    // its context was done before it ran; it answered itself
	oAborted                    // it panicked or called runtime.Goexit; its caller waits for the batch's end, then unwinds
	oFailed                     // it returned an error
	oClean                      // it changed nothing, and nothing before it in the batch did
	oCarried                    // the write carries its output, or a state it read
)

type outcome struct {
	kind outcomeKind
	err  error
}

// batch is one acquisition of the resource shared by its members: the
// leader (members[0]) and the callers queued when the resource was taken.
type batch[S any] struct {
	g        *Group[S]
	txn      Txn[S]
	members  []*member[S]
	outcome  []outcome
	reply    chan answer[S]
	cur      S
	changed  bool // some member's output is in cur
	handOff  sync.Once
	finished bool
	// one and oneOutcome back members and outcome for a batch of one.
	one        [1]*member[S]
	oneOutcome [1]outcome
}

// released passes leadership on: the resource is free for the next batch.
func (b *batch[S]) released() { b.handOff.Do(b.g.handOff) }

// run reads the state, applies the leader's operation in the leader's own
// goroutine, then the others' (finish), and returns the leader's outcome.
func (b *batch[S]) run() error {
	leaderOp := false
	defer func() {
		if b.finished {
			return
		}
		if leaderOp {
			// The leader's own operation panicked or called
			// runtime.Goexit. Finish the batch for the others here,
			// before the panic goes on up the leader's stack: their
			// operations, the write, the release and their answers do
			// not depend on this goroutine surviving.
			b.outcome[0].kind = oAborted
			b.finish(1)
			return
		}
		b.abandon()
	}()
	cur, err := b.txn.Read()
	if err != nil {
		relErr := b.txn.Release(false)
		b.released()
		err = errors.Join(err, relErr)
		for i := 1; i < len(b.members); i++ {
			if b.members[i].state.CompareAndSwap(stInBatch, stRunning) {
				b.members[i].ch <- msg[S]{kind: msgResult, err: err}
			}
		}
		b.finished = true
		return err
	}
	b.cur = cur
	leaderOp = true
	next, changed, err := b.members[0].op(b.cur)
	leaderOp = false
	b.record(0, answer[S]{next: next, changed: changed, err: err})
	b.finish(1)
	return b.outcome[0].err
}

// record files member i's answer and advances the state.
func (b *batch[S]) record(i int, a answer[S]) {
	o := &b.outcome[i]
	switch {
	case a.aborted:
		o.kind = oAborted
	case a.err != nil:
		o.kind, o.err = oFailed, a.err
	case a.changed:
		b.cur, b.changed = a.next, true
		o.kind = oCarried
	case b.changed:
		// It read an output of this batch that only the write makes
		// durable: it is answered by that write, like the output's owner.
		o.kind = oCarried
	default:
		o.kind = oClean
	}
}

// finish applies the operations of members[from:] in order, each in its
// own caller's goroutine, then writes (or releases) once and answers every
// member still waiting.
func (b *batch[S]) finish(from int) {
	defer func() {
		if !b.finished {
			b.abandon()
		}
	}()
	for i := from; i < len(b.members); i++ {
		m := b.members[i]
		if !m.state.CompareAndSwap(stInBatch, stRunning) {
			b.outcome[i].kind = oSkipped
			continue
		}
		m.ch <- msg[S]{kind: msgRun, cur: b.cur, reply: b.reply}
		b.record(i, <-b.reply)
	}
	var writeErr, relErr error
	if b.changed {
		writeErr, relErr = b.txn.Commit(b.cur, b.released)
	} else {
		relErr = b.txn.Release(slices.ContainsFunc(b.outcome, func(o outcome) bool { return o.kind == oClean }))
	}
	b.released()
	for i := range b.members {
		o := &b.outcome[i]
		switch o.kind {
		case oFailed:
			o.err = errors.Join(o.err, relErr)
		case oCarried:
			o.err = errors.Join(writeErr, relErr)
		case oClean:
			o.err = relErr
		case oAborted:
			// Its goroutine waits for the batch's end before its panic
			// goes on (member.run); the leader's does not wait.
		default:
			continue
		}
		if i > 0 {
			b.members[i].ch <- msg[S]{kind: msgResult, err: o.err}
		}
	}
	b.finished = true
}

// abandon answers everyone still waiting with ErrAbandoned, after the
// batch's Read, Commit or Release panicked or called runtime.Goexit, and
// passes leadership on. (The leader's goroutine is unwinding: its own
// answer does not matter.)
func (b *batch[S]) abandon() {
	b.finished = true
	b.released()
	for i := 1; i < len(b.members); i++ {
		m := b.members[i]
		switch b.outcome[i].kind {
		case oPending:
			if !m.state.CompareAndSwap(stInBatch, stRunning) {
				continue // it was cancelled and answered itself
			}
		case oSkipped:
			continue
		}
		m.ch <- msg[S]{kind: msgResult, err: ErrAbandoned}
	}
}
