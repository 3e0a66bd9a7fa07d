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
// as soon as it is released, not after a backoff step. The kernel sends
// the close event before it drops the closed ticket's lock, so without the
// explicit unlock in ticket.leave the second waiter often still sees the
// first one's ticket, goes back to sleep watching for ticket closes only,
// and misses the release: it then waits out a backoff step (up to 100 ms).
// Real processes: within one process the race rarely shows.
func TestSecondWaiterTakesLockPromptly(t *testing.T) {
	var worst time.Duration
	for range 3 {
		e := newEnv(t)
		h, err := Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := func(holdMs string) chan [2]int64 {
			cmd := workerCmd(ctx, "holdts", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot,
				"STATELOCK_HOLD_MS="+holdMs)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ch := make(chan [2]int64, 1)
			go func() {
				var got [2]int64
				sc := bufio.NewScanner(out)
				for sc.Scan() {
					f := strings.Fields(sc.Text())
					if len(f) == 2 {
						n, _ := strconv.ParseInt(f[1], 10, 64)
						if f[0] == "H" {
							got[0] = n
						} else {
							got[1] = n
						}
					}
				}
				cmd.Wait()
				ch <- got
			}()
			return ch
		}
		a := start("300")
		time.Sleep(200 * time.Millisecond) // A queues first
		b := start("0")
		time.Sleep(600 * time.Millisecond) // B's backoff grows to its 100 ms steps
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
		at, bt := <-a, <-b
		cancel()
		if at[0] == 0 || at[1] == 0 || bt[0] == 0 {
			t.Fatalf("a worker failed: A %v, B %v", at, bt)
		}
		delay := time.Duration(bt[0] - at[1])
		t.Logf("the second waiter took the lock %v after the first released it", delay)
		worst = max(worst, delay)
	}
	if worst > 25*time.Millisecond {
		t.Fatalf("the second waiter took up to %v to notice a release", worst)
	}
}

// The kernel sends IN_CLOSE_NOWRITE for a closed descriptor before it drops
// the descriptor's OFD locks. A waiter woken by the close of the ticket
// ahead of it must not find that ticket still queued: ticket.leave drops
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
			if queueAheadFd(uintptr(probe.fd), -1) {
				stale++
			}
		}
		seen <- stale
	}()
	for range rounds {
		<-ready
		tk := l.join(nil)
		if tk == nil || tk.fd < 0 {
			t.Fatal("could not join the queue")
		}
		tk.leave()
	}
	if n := <-seen; n > 0 {
		t.Fatalf("%d of %d ticket closes were seen while the ticket was still queued", n, rounds)
	}
}
