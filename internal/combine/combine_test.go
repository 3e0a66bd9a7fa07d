package combine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// res is a resource for the tests: a lock (a one-slot channel, so that an
// acquisition can wait on a context), a state (the ids of the operations
// applied, in order), and counts of every Txn call.
type res struct {
	sem                       chan struct{}
	state                     []int
	reads, commits, releases  atomic.Int32
	confirms                  atomic.Int32
	acquires                  atomic.Int32
	readErr, writeErr, relErr error
	acquireErr                func(n int32) error // error of the n-th acquisition (1-based), or nil
	beforeCommit              func()              // run inside Commit, after released()
	panicIn                   string              // "read", "commit" or "release": that call panics
	holding                   atomic.Bool
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

func newRes() *res { return &res{sem: make(chan struct{}, 1)} }

func (r *res) acquire(ctx context.Context) (Txn[[]int], error) {
	n := r.acquires.Add(1)
	if r.acquireErr != nil {
		if err := r.acquireErr(n); err != nil {
			return nil, err
		}
	}
	select {
	case r.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if !r.holding.CompareAndSwap(false, true) {
		panic("two holders")
	}
	return &txn{r: r}, nil
}

func (r *res) unlock() {
	if !r.holding.CompareAndSwap(true, false) {
		panic("release of a resource not held")
	}
	<-r.sem
}

// hold takes the resource for the test itself; the returned func gives it back.
func (r *res) hold() func() {
	r.sem <- struct{}{}
	return func() { <-r.sem }
}

type txn struct {
	r    *res
	done bool
}

func (t *txn) Read() ([]int, error) {
	t.r.reads.Add(1)
	if t.r.panicIn == "read" {
		t.done = true
		t.r.unlock() // the Txn gives the resource back on its own, as the contract asks
		panic("read panicked")
	}
	return slices.Clone(t.r.state), t.r.readErr
}

func (t *txn) Commit(s []int, released func()) (error, error) {
	if t.done {
		panic("Txn used twice")
	}
	t.done = true
	t.r.commits.Add(1)
	if t.r.panicIn == "commit" {
		t.r.unlock()
		panic("commit panicked")
	}
	if t.r.writeErr == nil {
		t.r.state = slices.Clone(s)
	}
	t.r.unlock()
	released()
	if t.r.beforeCommit != nil {
		t.r.beforeCommit()
	}
	return t.r.writeErr, t.r.relErr
}

func (t *txn) Release(confirm bool) error {
	t.r.confirms.Add(b2i(confirm))
	if t.done {
		panic("Txn used twice")
	}
	t.done = true
	t.r.releases.Add(1)
	t.r.unlock()
	if t.r.panicIn == "release" {
		panic("release panicked")
	}
	return t.r.relErr
}

// appendOp appends id to the state, recording the state it was given.
func appendOp(id int, saw *[]int) Op[[]int] {
	return func(cur []int) ([]int, bool, error) {
		if saw != nil {
			*saw = slices.Clone(cur)
		}
		return append(slices.Clone(cur), id), true, nil
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// call runs Do in a goroutine; its outcome arrives on the channel: the error,
// or the value Do panicked with, or goexit when the goroutine was ended by
// runtime.Goexit.
type result struct {
	err      error
	panicked any
	goexit   bool
}

func call(g *Group[[]int], ctx context.Context, r *res, op Op[[]int]) <-chan result {
	ch := make(chan result, 1)
	go func() {
		returned, panicking := false, true
		defer func() {
			switch {
			case returned:
			case panicking:
				ch <- result{panicked: recover()}
			default:
				ch <- result{goexit: true}
			}
		}()
		defer func() {
			// recover() == nil here means runtime.Goexit (or panic(nil),
			// which the tests never do).
			if !returned {
				if v := recover(); v != nil {
					ch <- result{panicked: v}
					returned = true
					return
				}
				panicking = false
			}
		}()
		err := g.Do(ctx, r.acquire, op)
		returned = true
		ch <- result{err: err}
	}()
	return ch
}

// queue starts a leader that blocks on the held resource, then callers one
// by one, each queued before the next starts, so arrival order is known.
func queue(t *testing.T, g *Group[[]int], r *res, ctxs []context.Context, ops []Op[[]int]) []<-chan result {
	t.Helper()
	var chs []<-chan result
	for i, op := range ops {
		ctx := context.Background()
		if ctxs != nil && ctxs[i] != nil {
			ctx = ctxs[i]
		}
		chs = append(chs, call(g, ctx, r, op))
		if i == 0 {
			waitFor(t, "the leader's acquisition", func() bool { return r.acquires.Load() >= 1 })
		} else {
			waitFor(t, fmt.Sprintf("caller %d to queue", i), func() bool { return g.queued() == i })
		}
	}
	return chs
}

func get(t *testing.T, ch <-chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("a caller never returned")
		return result{}
	}
}

// Callers that queue while the resource is busy share one acquisition, one
// read and one write; operations run in arrival order, each on the output
// of the one before.
func TestOneBatchInArrivalOrder(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	free := r.hold()
	const n = 8
	saw := make([][]int, n)
	var ops []Op[[]int]
	for i := range n {
		ops = append(ops, appendOp(i, &saw[i]))
	}
	chs := queue(t, &g, r, nil, ops)
	free()
	for i, ch := range chs {
		if res := get(t, ch); res.err != nil || res.panicked != nil || res.goexit {
			t.Fatalf("caller %d: %+v", i, res)
		}
	}
	if r.reads.Load() != 1 || r.commits.Load() != 1 || r.releases.Load() != 0 || r.acquires.Load() != 1 {
		t.Fatalf("acquires %d reads %d commits %d releases %d, want 1 1 1 0", r.acquires.Load(), r.reads.Load(), r.commits.Load(), r.releases.Load())
	}
	want := []int{0, 1, 2, 3, 4, 5, 6, 7}
	if !slices.Equal(r.state, want) {
		t.Fatalf("state %v, want %v", r.state, want)
	}
	for i := range n {
		if !slices.Equal(saw[i], want[:i]) {
			t.Fatalf("caller %d saw %v, want %v", i, saw[i], want[:i])
		}
	}
}

// An error goes to its own caller; the next operation sees the output of
// the last one that succeeded; a caller that changes nothing after a change
// is answered by the write; one that changes nothing before any change is
// not.
func TestErrorsAndNoChangePerCaller(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	r.writeErr = errors.New("disk full")
	free := r.hold()
	errOwn := errors.New("caller 1's own error")
	var saw2, saw3 []int
	noChange := func(saw *[]int) Op[[]int] {
		return func(cur []int) ([]int, bool, error) {
			if saw != nil {
				*saw = slices.Clone(cur)
			}
			return nil, false, nil
		}
	}
	chs := queue(t, &g, r, nil, []Op[[]int]{
		noChange(nil),
		func([]int) ([]int, bool, error) { return []int{99}, true, errOwn },
		appendOp(2, &saw2),
		noChange(&saw3),
	})
	free()
	got := make([]error, len(chs))
	for i, ch := range chs {
		got[i] = get(t, ch).err
	}
	if got[0] != nil {
		t.Errorf("caller 0 (no change, before any change): %v, want nil", got[0])
	}
	if !errors.Is(got[1], errOwn) || errors.Is(got[1], r.writeErr) {
		t.Errorf("caller 1: %v, want its own error alone", got[1])
	}
	if !errors.Is(got[2], r.writeErr) || !errors.Is(got[3], r.writeErr) {
		t.Errorf("callers 2, 3: %v, %v; want the write's error", got[2], got[3])
	}
	if len(saw2) != 0 || !slices.Equal(saw3, []int{2}) {
		t.Errorf("caller 2 saw %v (want []: caller 1 failed), caller 3 saw %v (want [2])", saw2, saw3)
	}
}

// A batch in which nothing changes writes nothing.
func TestNoChangeWritesNothing(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	free := r.hold()
	same := func(cur []int) ([]int, bool, error) { return cur, false, nil }
	fail := func([]int) ([]int, bool, error) { return nil, false, errors.New("no") }
	chs := queue(t, &g, r, nil, []Op[[]int]{same, fail, same})
	free()
	for _, ch := range chs {
		get(t, ch)
	}
	if r.commits.Load() != 0 || r.releases.Load() != 1 || r.confirms.Load() != 1 {
		t.Fatalf("commits %d releases %d confirms %d, want 0 1 1", r.commits.Load(), r.releases.Load(), r.confirms.Load())
	}
}

// A read error fails the whole batch; no operation runs.
func TestReadErrorFailsBatch(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	r.readErr = errors.New("cannot read")
	free := r.hold()
	var ran atomic.Int32
	op := func(cur []int) ([]int, bool, error) { ran.Add(1); return cur, true, nil }
	chs := queue(t, &g, r, nil, []Op[[]int]{op, op, op})
	free()
	for i, ch := range chs {
		if err := get(t, ch).err; !errors.Is(err, r.readErr) {
			t.Errorf("caller %d: %v, want the read error", i, err)
		}
	}
	if ran.Load() != 0 || r.releases.Load() != 1 {
		t.Fatalf("ran %d releases %d, want 0 1", ran.Load(), r.releases.Load())
	}
}

// A panic in a member's operation reaches its own caller, in its own
// goroutine, with its value, once the batch is done (caller 2's operation
// runs after it and watches for it); the batch goes on without its output.
func TestMemberPanicGoesToItsCaller(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	free := r.hold()
	var saw2 []int
	arrived := make(chan result, 1)
	var early atomic.Bool
	chs := queue(t, &g, r, nil, []Op[[]int]{
		appendOp(0, nil),
		func([]int) ([]int, bool, error) { panic("boom 1") },
		func(cur []int) ([]int, bool, error) {
			select {
			case <-arrived:
				early.Store(true)
			case <-time.After(200 * time.Millisecond):
			}
			saw2 = slices.Clone(cur)
			return append(slices.Clone(cur), 2), true, nil
		},
	})
	go func() { arrived <- get(t, chs[1]) }()
	free()
	for _, i := range []int{0, 2} {
		if res := get(t, chs[i]); res.err != nil || res.panicked != nil {
			t.Fatalf("caller %d: %+v", i, res)
		}
	}
	if early.Load() {
		t.Fatal("caller 1's panic reached it while its batch was still running")
	}
	if res := <-arrived; res.panicked != "boom 1" {
		t.Fatalf("caller 1: %+v, want its panic", res)
	}
	if !slices.Equal(r.state, []int{0, 2}) || !slices.Equal(saw2, []int{0}) || r.commits.Load() != 1 {
		t.Fatalf("state %v, caller 2 saw %v, commits %d", r.state, saw2, r.commits.Load())
	}
}

// A panic in the leader's own operation: the leader finishes the batch for
// the others, releases, and only then does its panic go on.
func TestLeaderPanicFinishesBatchFirst(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	free := r.hold()
	var atPanic struct {
		commits int32
		free    bool
	}
	chs := make([]<-chan result, 0, 3)
	leader := make(chan result, 1)
	go func() {
		defer func() {
			v := recover()
			atPanic.commits = r.commits.Load()
			atPanic.free = len(r.sem) == 0
			leader <- result{panicked: v}
		}()
		g.Do(context.Background(), r.acquire, func([]int) ([]int, bool, error) { panic("leader boom") })
	}()
	chs = append(chs, leader)
	waitFor(t, "the leader's acquisition", func() bool { return r.acquires.Load() == 1 })
	chs = append(chs, call(&g, context.Background(), r, appendOp(1, nil)))
	waitFor(t, "caller 1 to queue", func() bool { return g.queued() == 1 })
	chs = append(chs, call(&g, context.Background(), r, appendOp(2, nil)))
	waitFor(t, "caller 2 to queue", func() bool { return g.queued() == 2 })
	free()
	if res := get(t, chs[0]); res.panicked != "leader boom" {
		t.Fatalf("leader: %+v", res)
	}
	if atPanic.commits != 1 || !atPanic.free {
		t.Fatalf("when the leader's panic went on: commits %d, resource free %v; want 1, true", atPanic.commits, atPanic.free)
	}
	for _, i := range []int{1, 2} {
		if res := get(t, chs[i]); res.err != nil || res.panicked != nil {
			t.Fatalf("caller %d: %+v", i, res)
		}
	}
	if !slices.Equal(r.state, []int{1, 2}) {
		t.Fatalf("state %v", r.state)
	}
}

// runtime.Goexit in an operation (t.FailNow inside it, say) ends its own
// caller's goroutine and nobody else's.
func TestGoexitInOperation(t *testing.T) {
	for _, who := range []int{0, 1} {
		t.Run(fmt.Sprint("caller", who), func(t *testing.T) {
			var g Group[[]int]
			r := newRes()
			free := r.hold()
			ops := []Op[[]int]{appendOp(0, nil), appendOp(1, nil), appendOp(2, nil)}
			ops[who] = func([]int) ([]int, bool, error) { runtime.Goexit(); return nil, false, nil }
			chs := queue(t, &g, r, nil, ops)
			free()
			for i, ch := range chs {
				res := get(t, ch)
				if (i == who) != res.goexit || res.err != nil {
					t.Fatalf("caller %d: %+v", i, res)
				}
			}
			if r.commits.Load() != 1 || len(r.sem) != 0 {
				t.Fatalf("commits %d, resource held %v", r.commits.Load(), len(r.sem) != 0)
			}
		})
	}
}

// A caller cancelled while queued, before a batch took it, returns at once
// with ErrNotRun; its operation never runs.
func TestCancelWhileQueued(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	free := r.hold()
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	chs := queue(t, &g, r, []context.Context{nil, ctx, nil}, []Op[[]int]{
		appendOp(0, nil),
		func(cur []int) ([]int, bool, error) { ran.Store(true); return cur, true, nil },
		appendOp(2, nil),
	})
	cancel()
	if err := get(t, chs[1]).err; !errors.Is(err, ErrNotRun) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	free()
	for _, i := range []int{0, 2} {
		if err := get(t, chs[i]).err; err != nil {
			t.Fatal(err)
		}
	}
	if ran.Load() || !slices.Equal(r.state, []int{0, 2}) {
		t.Fatalf("ran %v state %v", ran.Load(), r.state)
	}
}

// A caller taken into a batch and cancelled before its turn returns at once
// with ErrNotRun, and the batch skips it.
func TestCancelInBatchBeforeTurn(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	free := r.hold()
	ctx, cancel := context.WithCancel(context.Background())
	inOp0 := make(chan struct{})
	go0 := make(chan struct{})
	var ran atomic.Bool
	chs := queue(t, &g, r, []context.Context{nil, ctx, nil}, []Op[[]int]{
		func(cur []int) ([]int, bool, error) { close(inOp0); <-go0; return append(cur, 0), true, nil },
		func(cur []int) ([]int, bool, error) { ran.Store(true); return cur, true, nil },
		appendOp(2, nil),
	})
	free()
	<-inOp0 // the batch is formed: callers 1 and 2 are in it
	cancel()
	if err := get(t, chs[1]).err; !errors.Is(err, ErrNotRun) {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(go0)
	for _, i := range []int{0, 2} {
		if err := get(t, chs[i]).err; err != nil {
			t.Fatal(err)
		}
	}
	if ran.Load() || !slices.Equal(r.state, []int{0, 2}) || r.commits.Load() != 1 {
		t.Fatalf("ran %v state %v commits %d", ran.Load(), r.state, r.commits.Load())
	}
}

// A caller cancelled after its operation ran is told the write's outcome.
func TestCancelAfterRunToldOutcome(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	r.writeErr = errors.New("the write failed")
	free := r.hold()
	ctx, cancel := context.WithCancel(context.Background())
	inCommit := make(chan struct{})
	goOn := make(chan struct{})
	r.beforeCommit = func() { close(inCommit); <-goOn }
	chs := queue(t, &g, r, []context.Context{nil, ctx}, []Op[[]int]{appendOp(0, nil), appendOp(1, nil)})
	free()
	<-inCommit
	cancel()
	select {
	case res := <-chs[1]:
		t.Fatalf("a caller whose operation ran returned before the write's outcome: %+v", res)
	case <-time.After(20 * time.Millisecond):
	}
	close(goOn)
	if err := get(t, chs[1]).err; !errors.Is(err, r.writeErr) || errors.Is(err, ErrNotRun) {
		t.Fatalf("cancelled caller after its run: %v, want the write's error", err)
	}
}

// The leader's context ends while it acquires: the leader alone fails, the
// next caller leads, and the rest commit in one batch.
func TestLeaderCancelledWhileAcquiringHandsOn(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	free := r.hold()
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Bool
	chs := queue(t, &g, r, []context.Context{ctx, nil, nil, nil}, []Op[[]int]{
		func(cur []int) ([]int, bool, error) { ran.Store(true); return cur, true, nil },
		appendOp(1, nil), appendOp(2, nil), appendOp(3, nil),
	})
	cancel()
	if err := get(t, chs[0]).err; !errors.Is(err, context.Canceled) || errors.Is(err, ErrNotRun) {
		t.Fatalf("leader: %v, want its acquisition's context error", err)
	}
	waitFor(t, "caller 1 to lead", func() bool { return r.acquires.Load() == 2 })
	free()
	for _, i := range []int{1, 2, 3} {
		if err := get(t, chs[i]).err; err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if ran.Load() || !slices.Equal(r.state, []int{1, 2, 3}) || r.commits.Load() != 1 {
		t.Fatalf("ran %v state %v commits %d", ran.Load(), r.state, r.commits.Load())
	}
}

// A failed acquisition (an unusable resource, a budget) is the leader's
// alone; the next caller acquires with its own.
func TestAcquireErrorGoesToLeaderAlone(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	errBusy := errors.New("busy for the first caller")
	release := make(chan struct{})
	r.acquireErr = func(n int32) error {
		if n == 1 {
			<-release
			return errBusy
		}
		return nil
	}
	chs := queue(t, &g, r, nil, []Op[[]int]{appendOp(0, nil), appendOp(1, nil), appendOp(2, nil)})
	close(release)
	if err := get(t, chs[0]).err; !errors.Is(err, errBusy) {
		t.Fatalf("leader: %v", err)
	}
	for _, i := range []int{1, 2} {
		if err := get(t, chs[i]).err; err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	if !slices.Equal(r.state, []int{1, 2}) {
		t.Fatalf("state %v", r.state)
	}
}

// The next batch acquires as soon as the previous one released (Commit's
// released callback), before that batch's write is done.
func TestNextBatchStartsAtRelease(t *testing.T) {
	var g Group[[]int]
	r := newRes()
	goOn := make(chan struct{})
	var first atomic.Bool
	r.beforeCommit = func() {
		if first.CompareAndSwap(false, true) {
			<-goOn
		}
	}
	a := call(&g, context.Background(), r, appendOp(0, nil))
	waitFor(t, "the first write", func() bool { return first.Load() })
	b := call(&g, context.Background(), r, appendOp(1, nil))
	if err := get(t, b).err; err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-a:
		t.Fatalf("the first caller returned before its write was done: %+v", res)
	default:
	}
	close(goOn)
	if err := get(t, a).err; err != nil {
		t.Fatal(err)
	}
	if r.commits.Load() != 2 || !slices.Equal(r.state, []int{0, 1}) {
		t.Fatalf("commits %d state %v", r.commits.Load(), r.state)
	}
}

// A Txn that panics abandons its batch: every waiting caller is told
// ErrAbandoned, and the Group keeps working.
func TestTxnPanicAbandons(t *testing.T) {
	for _, where := range []string{"read", "commit", "release"} {
		t.Run(where, func(t *testing.T) {
			var g Group[[]int]
			r := newRes()
			r.panicIn = where
			free := r.hold()
			op := appendOp(1, nil)
			if where == "release" {
				op = func(cur []int) ([]int, bool, error) { return cur, false, nil }
			}
			chs := queue(t, &g, r, nil, []Op[[]int]{op, op, op})
			free()
			if res := get(t, chs[0]); res.panicked != where+" panicked" {
				t.Fatalf("leader: %+v", res)
			}
			for _, i := range []int{1, 2} {
				if err := get(t, chs[i]).err; !errors.Is(err, ErrAbandoned) {
					t.Fatalf("caller %d: %v", i, err)
				}
			}
			r.panicIn = ""
			if err := get(t, call(&g, context.Background(), r, appendOp(7, nil))).err; err != nil {
				t.Fatalf("after the abandoned batch: %v", err)
			}
		})
	}
}

// Many goroutines on a few resources, with errors, panics, no-change
// operations and cancellations at random: every successful increment is
// in its resource's state exactly once, nothing else is, no two batches
// of a resource overlap (res.holding), and the Map forgets every Group.
func TestStressMap(t *testing.T) {
	var m Map[int, []int]
	const keys, workers, per = 3, 48, 150
	rs := make([]*res, keys)
	for i := range rs {
		rs[i] = newRes()
	}
	var okCount [keys]atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range per {
				k := rng.IntN(keys)
				r := rs[k]
				id := w*per + i
				kind := rng.IntN(10)
				ctx, cancel := context.WithCancel(context.Background())
				if kind == 9 {
					delay := time.Duration(rng.IntN(50)) * time.Microsecond
					go func() { time.Sleep(delay); cancel() }()
				}
				func() {
					defer func() {
						if v := recover(); v != nil && v != "op panic" {
							panic(v)
						}
					}()
					err := m.Do(ctx, k, r.acquire, func(cur []int) ([]int, bool, error) {
						switch kind {
						case 0:
							return nil, false, errors.New("op error")
						case 1:
							panic("op panic")
						case 2:
							return cur, false, nil
						}
						return append(slices.Clone(cur), id), true, nil
					})
					if err == nil && kind >= 3 {
						okCount[k].Add(1)
					}
					if err != nil && kind != 0 && !errors.Is(err, ErrNotRun) && !errors.Is(err, context.Canceled) {
						t.Errorf("op %d: %v", id, err)
					}
				}()
				cancel()
			}
		}()
	}
	wg.Wait()
	for k, r := range rs {
		seen := map[int]bool{}
		last := map[int]int{} // worker -> its last id in the state
		for _, id := range r.state {
			if seen[id] {
				t.Fatalf("resource %d: id %d applied twice", k, id)
			}
			seen[id] = true
			// One worker's calls are sequential: its updates must appear in
			// the order it made them.
			if prev, ok := last[id/per]; ok && prev > id {
				t.Fatalf("resource %d: worker %d's update %d applied after its later %d", k, id/per, id%per, prev%per)
			}
			last[id/per] = id
		}
		// A cancelled caller that had already run is told the outcome (nil
		// here), so its id is in the state and counted: they match exactly.
		if int64(len(r.state)) != okCount[k].Load() {
			t.Fatalf("resource %d: %d applied, %d reported applied", k, len(r.state), okCount[k].Load())
		}
		t.Logf("resource %d: %d updates in %d acquisitions", k, len(r.state), r.acquires.Load())
	}
	if n := m.Len(); n != 0 {
		t.Fatalf("Map keeps %d groups after every call returned", n)
	}
}
