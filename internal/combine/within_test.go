package combine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

var errBudget = errors.New("budget")

// DoWithin's deadline bounds a caller's wait in the queue, with its cause,
// as a context with that deadline did when statelock made one per call; a
// caller that leads is not bounded by it (its acquisition has its own
// budget), as before, when acquire ignored the queue's context.
func TestDoWithinDeadlineEndsQueuedWaitOnly(t *testing.T) {
	var m Map[string, []int]
	r := newRes()
	past := time.Now().Add(-time.Second)
	// Leading at once with a deadline gone: it runs.
	if err := m.DoWithin(context.Background(), "k", past, errBudget, r.acquire, appendOp(1, nil)); err != nil {
		t.Fatalf("a leader with its queue deadline gone: %v", err)
	}
	// Queued behind a batch that holds the resource: it gives up with the
	// cause, never runs, and the others are unaffected.
	free := r.hold()
	leader := make(chan error, 1)
	go func() { leader <- m.DoWithin(context.Background(), "k", time.Time{}, nil, r.acquire, appendOp(2, nil)) }()
	waitFor(t, "the leader's acquisition", func() bool { return r.acquires.Load() >= 2 })
	ran := false
	err := m.DoWithin(context.Background(), "k", past, errBudget, r.acquire, func(cur []int) ([]int, bool, error) { ran = true; return cur, true, nil })
	if !errors.Is(err, ErrNotRun) || !errors.Is(err, errBudget) || ran {
		t.Fatalf("a queued caller past its deadline: %v (ran %v), want ErrNotRun with its cause", err, ran)
	}
	free()
	if err := <-leader; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.state, []int{1, 2}) {
		t.Fatalf("state %v, want [1 2]", r.state)
	}
}

// An uncontended caller makes no channel, no context and no slices
// beyond its member and batch (issue 25): pinned so the fast path stays.
// Before, it made a member channel, a reply channel and two slices.
func TestUncontendedDoAllocations(t *testing.T) {
	var m Map[string, []int]
	ctx := context.Background()
	acquire := func(context.Context) (Txn[[]int], error) { return nopTxn{}, nil }
	op := func(cur []int) ([]int, bool, error) { return cur, true, nil }
	n := testing.AllocsPerRun(100, func() {
		if err := m.DoWithin(ctx, "k", time.Now().Add(time.Hour), errBudget, acquire, op); err != nil {
			t.Fatal(err)
		}
	})
	// mapEntry, member, batch, and the batch's released method value
	// given to Commit.
	if n > 4 {
		t.Errorf("%v allocations per uncontended Do, want at most 4", n)
	}
}

type nopTxn struct{}

func (nopTxn) Read() ([]int, error)                           { return nil, nil }
func (nopTxn) Commit(s []int, released func()) (error, error) { released(); return nil, nil }
func (nopTxn) Release(bool) error                             { return nil }
