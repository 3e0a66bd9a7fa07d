//go:build !exactfs_portable

package statelock

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// New callers of one process look at F.lock through one shared descriptor,
// which is closed once it has been idle for the policy's LookIdle. (Not
// parallel: it counts the process's look descriptors, and a closed
// descriptor's number may be another test's at once.)
func TestLookDescriptorSharedAndClosedWhenIdle(t *testing.T) {
	const lookIdle = 50 * time.Millisecond
	e := newEnv(t)
	e.extra = []Option{withPolicy(func(p *wake.Policy) { p.LookIdle = lookIdle })}
	lockCycle(t, e)
	l, err := newLocker(e.state, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	fd1, done1 := l.lookProbe(l.lockName)
	fd2, done2 := l.lookProbe(l.lockName)
	if fd1 < 0 || fd1 != fd2 {
		t.Fatalf("two looks used descriptors %d and %d, want one shared", fd1, fd2)
	}
	done1()
	time.Sleep(3 * lookIdle)
	if _, err := unix.FcntlInt(uintptr(fd1), unix.F_GETFD, 0); err != nil {
		t.Fatalf("the descriptor was closed while a look still used it: %v", err)
	}
	done2()
	deadline := time.Now().Add(5 * time.Second)
	for {
		looks.Lock()
		n := len(looks.m)
		looks.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d look descriptors still open long after they went idle", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A waiter behind the first must be woken when the first takes the lock
// (the first one's ticket closes), become first itself, and take the lock
// when it is released because the release woke it, not because a backoff
// step ran out. The kernel sends the close event before it drops the
// closed ticket's lock, so without the explicit unlock in wake.Queue.Drop the
// second waiter often still sees the first one's ticket, goes back to
// sleep watching for ticket closes only, and misses the release: its sleep
// then runs out (up to 100 ms later) with nothing to wake it.
//
// The workers report each sleep that ran out (hook.LockWaitTimedOut, with
// the time its deadline came, taken before the waiter's last look for an
// event that came with it). A sleep of the second waiter that ran out after
// the first one's Unlock returned, before the second took the lock, is
// that miss; timing plays no part in the verdict. Real processes: within
// one process the race rarely shows.
//
// The order of the two waiters is observed, not slept for: B is started
// only once A waits (its queue ticket, or its seat), and the lock is
// released only once B waits too, so A arrived first whatever the load
// (the sleeps of the version before assumed a process starts in 200 ms:
// under load B overtook A, and the test failed on "B held the lock before
// A released it"). The waiters wait the reference way (Queue and Watch,
// the mechanism above) with the cohort off in the workers
// (STATELOCK_NO_COHORT, which also stretches the queue's Trust: past it a
// waiter behind attempts anyway, and under load B waited behind A for
// longer than the default second before the release and overtook it);
// where the kernel gives the cohort a slot, a last
// round runs them seated, served by hand-off in their arrival order (no
// sleep of a seated waiter reports running out: there only the order and
// the hand-over are checked).
func TestSecondWaiterTakesLockPromptly(t *testing.T) {
	type report struct {
		held, released int64   // when the worker held the lock, and when its Unlock returned
		ranOut         []int64 // deadlines of its sleeps that nothing woke
	}
	rounds := []bool{false, false, cohortKernel()} // the workers seated (the cohort on)
	const holdA = 300 * time.Millisecond
	for _, seated := range rounds {
		e := newEnv(t)
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		start := func(holdMs, lingerMs string) chan report {
			env := []string{"STATELOCK_STATE=" + e.state, "STATELOCK_CONFIG=" + e.configRoot,
				"STATELOCK_HOLD_MS=" + holdMs, "STATELOCK_LINGER_MS=" + lingerMs}
			if !seated {
				env = append(env, "STATELOCK_NO_COHORT=1")
			}
			cmd := workerCmd(ctx, "holdts", env...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ch := make(chan report, 1)
			go func() {
				var got report
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) != 2 {
						continue
					}
					n, _ := strconv.ParseInt(f[1], 10, 64)
					switch f[0] {
					case "H":
						got.held = n
					case "R":
						got.released = n
					case "T":
						got.ranOut = append(got.ranOut, n)
					}
				}
				cmd.Wait()
				ch <- got
			}()
			return ch
		}
		waiting := func(n int) {
			t.Helper()
			for begin := time.Now(); waitersOn(t, e) < n; {
				if time.Since(begin) > 30*time.Second {
					t.Fatalf("%d waiters queued or seated after 30 s, want %d", waitersOn(t, e), n)
				}
				time.Sleep(time.Millisecond)
			}
		}
		// A stays alive for a while after its release: the closes of its
		// exit would wake a B that missed the release.
		a := start(strconv.Itoa(int(holdA/time.Millisecond)), "500")
		waiting(1) // A waits first
		b := start("0", "0")
		waiting(2)
		// B's backoff grows to its 100 ms steps, so that a missed release
		// costs B a whole step (not the verdict: that is the reports).
		time.Sleep(600 * time.Millisecond)
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
		at, bt := <-a, <-b
		cancel()
		if at.held == 0 || at.released == 0 || bt.held == 0 {
			t.Fatalf("a worker failed: A %+v, B %+v", at, bt)
		}
		// A's hold is its sleep between printing H and calling Unlock, so
		// B must hold no sooner than that after A took the lock. (Not
		// after A's R: a release hands the lock over, or wakes B, before
		// its Unlock returns, and B may print first.)
		if bt.held < at.held+int64(holdA) {
			t.Fatalf("B held the lock at %d, %v after A took it at %d, which it held for %v (seated: %v)",
				bt.held, time.Duration(bt.held-at.held), at.held, holdA, seated)
		}
		for _, d := range bt.ranOut {
			if d > at.released && d < bt.held {
				t.Fatalf("the second waiter missed the release: a sleep of its ran out %v after the first released, "+
					"and it took the lock %v after the release", time.Duration(d-at.released), time.Duration(bt.held-at.released))
			}
		}
		t.Logf("seated %v: the second waiter took the lock %v after the first released it (%d of its sleeps ran out before)",
			seated, time.Duration(bt.held-at.released), len(bt.ranOut))
	}
}

// waitersOn counts the waiters on e's lock: the queue tickets on the inode
// F.lock names (one-byte read locks from queueBase on; each F_OFD_GETLK
// names one, and the ranges on either side of it are asked again) and the
// WAITING seats of its mailbox.
func waitersOn(t *testing.T, e *testEnv) int {
	t.Helper()
	n := waitingSeats(e)
	f, err := os.Open(e.lock)
	if err != nil {
		return n
	}
	defer f.Close()
	var count func(from, to int64) int
	count = func(from, to int64) int {
		if from >= to {
			return 0
		}
		held, at, err := sys.OFDConflict(int(f.Fd()), from, to-from)
		if err != nil || !held || at < from || at >= to {
			return 0
		}
		return 1 + count(from, at) + count(at+1, to)
	}
	return n + count(queueBase, 1<<62)
}

// STATELOCK_NO_COHORT=1 makes a worker process wait and release the
// reference way (no seat, no hand-off), as where the kernel gives no slot;
// its queue then trusts a first waiter that makes no progress for a
// minute instead of wake.DefaultTrust (a second), so that a waiter behind
// never overtakes it because the machine stalled it (the order is what
// TestSecondWaiterTakesLockPromptly checks). Set before any call, in the
// worker process only: defaultPolicy is otherwise never written.
func init() {
	if os.Getenv(workerEnv) != "" && os.Getenv("STATELOCK_NO_COHORT") == "1" {
		defaultPolicy.Handoff = false
		defaultPolicy.Trust = time.Minute
	}
}

// The kernel sends IN_CLOSE_NOWRITE for a closed descriptor before it drops
// the descriptor's OFD locks. A waiter woken by the close of the ticket
// ahead of it must not find that ticket still queued: wake.Queue.Drop drops
// the lock before the close. This checks the order directly, many times: a
// watcher blocked on the close event looks for the ticket the moment it is
// woken.
func TestTicketGoneWhenItsCloseIsSeen(t *testing.T) {
	e := newEnv(t)
	lockCycle(t, e)
	l, err := newLocker(e.state, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	if _, err := unix.InotifyAddWatch(in, e.lock, unix.IN_CLOSE_NOWRITE); err != nil {
		t.Fatal(err)
	}
	probe := l.openProbe(l.lockName)
	defer probe.close()
	const rounds = 5000
	seen := make(chan int)
	ready := make(chan struct{})
	go func() {
		stale := 0
		var buf [4096]byte
		for range rounds {
			ready <- struct{}{}
			if _, err := unix.Read(in, buf[:]); err != nil {
				break
			}
			if testQueue.Ahead(probe.fd, -1) {
				stale++
			}
		}
		seen <- stale
	}()
	for range rounds {
		<-ready
		tk := l.join(nil)
		if tk == nil || tk.Fd < 0 {
			t.Fatal("could not join the queue")
		}
		l.leave(tk)
	}
	if n := <-seen; n > 0 {
		t.Fatalf("%d of %d ticket closes were seen while the ticket was still queued", n, rounds)
	}
}

// A hand-off's releaser parks its descriptor of F.lock (it holds nothing
// of the lock any more: its slot lock went before the grant), and this
// process's next seated wait on that inode takes it instead of opening
// F.lock again: the open, its two registration calls and the releaser's
// close, four system calls of every contended cycle. Granted through it,
// the new holder writes and releases through that same descriptor. On the
// code before, the releaser closed it: nothing was parked, and the third
// holder's descriptor was a new one.
func TestHandoffParksDescriptorForNextSeatedWait(t *testing.T) {
	requireCohort(t)
	e := newEnv(t)
	// Parked long enough for a stalled machine; closed when the test ends.
	e.extra = []Option{withPolicy(func(p *wake.Policy) { p.ParkIdle = time.Minute })}
	t.Cleanup(func() { closeParkedOn(e.lock) })
	lockAfterSeat := func() chan *Held {
		t.Helper()
		ch := make(chan *Held, 1)
		go func() {
			h, err := Lock(context.Background(), e.state, e.opts(WithWait(time.Minute))...)
			if err != nil {
				t.Error(err)
			}
			ch <- h
		}()
		for start := time.Now(); waitingSeats(e) < 1; {
			if time.Since(start) > 20*time.Second {
				t.Fatal("the waiter was never seated")
			}
			time.Sleep(time.Millisecond)
		}
		return ch
	}
	h1, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	accepted := countHook(t, hook.LockHandoffAccepted)
	f1 := h1.rec.f
	second := lockAfterSeat()
	if err := h1.Unlock(); err != nil {
		t.Fatal(err)
	}
	h2 := <-second
	if h2 == nil {
		t.FailNow()
	}
	if p := parkedOn(t, e.lock); len(p) != 1 || p[0] != f1 {
		t.Fatalf("after the hand-off %d descriptors are parked on F.lock, want exactly the releaser's", len(p))
	}
	third := lockAfterSeat()
	if p := parkedOn(t, e.lock); len(p) != 0 {
		t.Fatalf("a waiter is seated and %d descriptors are still parked on F.lock: it opened its own", len(p))
	}
	if err := h2.Unlock(); err != nil {
		t.Fatal(err)
	}
	h3 := <-third
	if h3 == nil {
		t.FailNow()
	}
	if accepted.Load() != 2 {
		t.Fatalf("%d hand-offs accepted, want 2", accepted.Load())
	}
	if h3.rec.f != f1 {
		t.Fatal("the third holder was granted through a new descriptor, not the one the first holder parked")
	}
	lockedRecordIsOurs(t, e, h3)
	if err := h3.Unlock(); err != nil {
		t.Fatal(err)
	}
}
