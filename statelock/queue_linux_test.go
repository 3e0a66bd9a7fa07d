//go:build !exactfs_portable

package statelock

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// New callers of one process look at F.lock through one shared descriptor,
// which is closed once it has been idle for lookIdle.
func TestLookDescriptorSharedAndClosedWhenIdle(t *testing.T) {
	defer func(d time.Duration) { lookIdle = d }(lookIdle)
	lookIdle = 50 * time.Millisecond
	e := newEnv(t)
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
func TestSecondWaiterTakesLockPromptly(t *testing.T) {
	type report struct {
		held, released int64   // when the worker held the lock, and when its Unlock returned
		ranOut         []int64 // deadlines of its sleeps that nothing woke
	}
	for range 3 {
		e := newEnv(t)
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := func(holdMs, lingerMs string) chan report {
			cmd := workerCmd(ctx, "holdts", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
				"STATELOCK_HOLD_MS="+holdMs, "STATELOCK_LINGER_MS="+lingerMs)
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
		// A stays alive for a while after its release: the closes of its
		// exit would wake a B that missed the release.
		a := start("300", "500")
		time.Sleep(200 * time.Millisecond) // A queues first
		b := start("0", "0")
		time.Sleep(600 * time.Millisecond) // B's backoff grows to its 100 ms steps
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
		at, bt := <-a, <-b
		cancel()
		if at.held == 0 || at.released == 0 || bt.held == 0 {
			t.Fatalf("a worker failed: A %+v, B %+v", at, bt)
		}
		if bt.held < at.released {
			t.Fatalf("B held the lock at %d, before A released it at %d", bt.held, at.released)
		}
		for _, d := range bt.ranOut {
			if d > at.released && d < bt.held {
				t.Fatalf("the second waiter missed the release: a sleep of its ran out %v after the first released, "+
					"and it took the lock %v after the release", time.Duration(d-at.released), time.Duration(bt.held-at.released))
			}
		}
		t.Logf("the second waiter took the lock %v after the first released it (%d of its sleeps ran out before)",
			time.Duration(bt.held-at.released), len(bt.ranOut))
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
