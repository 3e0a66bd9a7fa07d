package statelock

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/testfs"
)

// Early release under the power-cut harness (internal/testfs): a loop xfs
// or ext4 is cut off with FS_IOC_SHUTDOWN(NOLOGFLUSH), which drops whatever
// the journal held only in memory, and mounted again.

var powerCutFilesystems = []struct {
	name  string
	mount func(testing.TB) string
}{
	{"ext4", func(t testing.TB) string { return testfs.LoopExt4(t, 64) }},
	{"xfs", func(t testing.TB) string { return testfs.LoopXFS(t, 300) }},
}

// TestEarlyReleaseNextHolderCarriesBytes is the early-release argument at
// its one new crash point, made deterministic with a hook: A's bytes are
// renamed into place and A's lock is released; before A fsyncs the
// directory, B takes the lock, reads A's bytes, builds on them and returns
// (acknowledged); then the power is cut. After the remount B's bytes, and
// with them A's increment, are there. A's own fsync comes after the cut:
// ext4 fails it (ErrOutcomeUnknown), xfs finds nothing left to flush (B's
// fsync carried A's rename) and A succeeds truthfully; either is allowed,
// anything else is not.
func TestEarlyReleaseNextHolderCarriesBytes(t *testing.T) {
	for _, fsys := range powerCutFilesystems {
		t.Run(fsys.name, func(t *testing.T) {
			mnt := fsys.mount(t)
			state := filepath.Join(mnt, "state.json")
			opts := []Option{WithConfigRoot(t.TempDir())}
			ctx := context.Background()
			if err := Update(ctx, state, incrementCounter, opts...); err != nil {
				t.Fatal(err)
			}
			var armed atomic.Bool
			armed.Store(true)
			var bErr error
			bRan := false
			defer hook.Set(hook.Committed, func(path string) {
				if path != state || !armed.CompareAndSwap(true, false) {
					return
				}
				// A has renamed and released; its directory fsync is next.
				bRan = true
				bErr = Update(ctx, state, incrementCounter, opts...)
				testfs.Shutdown(t, mnt)
			})()
			aErr := Update(ctx, state, incrementCounter, opts...)
			if !bRan {
				t.Fatal("the hook after A's commit never ran")
			}
			if bErr != nil {
				t.Fatalf("B's update, made while A's rename was not yet durable: %v", bErr)
			}
			if aErr != nil && !errors.Is(aErr, ErrOutcomeUnknown) {
				t.Fatalf("A's directory fsync came after the cut; want success or ErrOutcomeUnknown, got %v", aErr)
			}
			t.Logf("A's result: %v", aErr)
			remountWhenClosed(t, mnt)
			if got := readCounter(t, state); got != 3 {
				t.Fatalf("after the power cut the counter is %d; want 3 (1, A's increment, and B's, which was acknowledged)", got)
			}
		})
	}
}

// TestEarlyReleaseFsyncErrorIsUnknownOutcome: the power is cut (a fault
// hook at the point after A's rename and early release, before its
// directory fsync), so that fsync fails with EIO. A's Update must say the
// outcome is unknown: ErrOutcomeUnknown, the durability_failed code of the
// fsync, and a message naming the state file and what was done. After the
// remount the counter holds the old value or A's, both whole.
//
// On ext4 only: after FS_IOC_SHUTDOWN, xfs's directory fsync returns 0
// (Linux 6.18: xfs_dir_fsync forces the log only for a pinned inode, and
// the shutdown unpinned everything when it threw the log away), so a cut
// cannot make it fail there.
func TestEarlyReleaseFsyncErrorIsUnknownOutcome(t *testing.T) {
	for _, fsys := range powerCutFilesystems[:1] {
		t.Run(fsys.name, func(t *testing.T) {
			mnt := fsys.mount(t)
			state := filepath.Join(mnt, "state.json")
			opts := []Option{WithConfigRoot(t.TempDir())}
			ctx := context.Background()
			if err := Update(ctx, state, incrementCounter, opts...); err != nil {
				t.Fatal(err)
			}
			var armed atomic.Bool
			armed.Store(true)
			defer hook.Set(hook.Committed, func(path string) {
				if path == state && armed.CompareAndSwap(true, false) {
					testfs.Shutdown(t, mnt)
				}
			})()
			aErr := Update(ctx, state, incrementCounter, opts...)
			if !errors.Is(aErr, ErrOutcomeUnknown) {
				t.Fatalf("the directory fsync failed after the early release; want ErrOutcomeUnknown, got %v", aErr)
			}
			if c := exactfs.CodeOf(aErr); c != exactfs.CodeDurabilityFailed {
				t.Errorf("the error has code %q, want %q: %v", c, exactfs.CodeDurabilityFailed, aErr)
			}
			if msg := aErr.Error(); !strings.Contains(msg, "lock released") || !strings.Contains(msg, state) {
				t.Errorf("the error does not say what was done to what: %v", aErr)
			}
			remountWhenClosed(t, mnt)
			if got := readCounter(t, state); got != 1 && got != 2 {
				t.Fatalf("after the power cut the counter is %d; want 1 (old) or 2 (new)", got)
			}
		})
	}
}

// TestEarlyReleaseAcknowledgedSurvivePowerCut: several writer processes
// increment one counter with Update (early release, the default) and
// print every value whose Update returned nil; the filesystem is cut off
// while they run. After the remount the counter is a whole, valid state at
// least as high as every acknowledged value: no acknowledged update is
// lost, whichever holder's fsync made it durable.
func TestEarlyReleaseAcknowledgedSurvivePowerCut(t *testing.T) {
	for _, fsys := range powerCutFilesystems {
		t.Run(fsys.name, func(t *testing.T) {
			for cut := range 2 {
				mnt := fsys.mount(t)
				state := filepath.Join(mnt, "state.json")
				config := t.TempDir()
				const writers = 4
				acks := make(chan int, 1<<16)
				var wg sync.WaitGroup
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				var cmds []*os_exec
				for range writers {
					cmd := workerCmd(ctx, "early", "STATELOCK_STATE="+state, "STATELOCK_CONFIG="+config)
					out, err := cmd.StdoutPipe()
					if err != nil {
						t.Fatal(err)
					}
					var stderr strings.Builder
					cmd.Stderr = &stderr
					defer func() {
						if t.Failed() {
							t.Logf("a writer's messages (they stop at the cut):\n%s", stderr.String())
						}
					}()
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					cmds = append(cmds, &os_exec{cmd})
					wg.Add(1)
					go func() {
						defer wg.Done()
						s := bufio.NewScanner(out)
						for s.Scan() {
							if n, err := strconv.Atoi(s.Text()); err == nil {
								acks <- n
							}
						}
					}()
				}
				// Let them run into steady contention, then cut at a moment
				// that differs from cut to cut.
				deadline := time.Now().Add(10 * time.Second)
				seen, high := 0, 0
				for seen < 150+100*cut && time.Now().Before(deadline) {
					select {
					case n := <-acks:
						seen++
						high = max(high, n)
					case <-time.After(100 * time.Millisecond):
					}
				}
				// Only what was acknowledged before the cut counts: after it,
				// xfs answers a directory fsync with 0 (see
				// TestEarlyReleaseFsyncErrorIsUnknownOutcome), which no process
				// sees after a real power cut.
				testfs.Shutdown(t, mnt)
				time.Sleep(200 * time.Millisecond)
				for _, c := range cmds {
					c.Process.Kill()
					c.Wait()
				}
				cancel()
				wg.Wait()
				close(acks)
				late := 0
				for n := range acks {
					late = max(late, n)
				}
				if high == 0 {
					t.Fatal("no update was acknowledged before the cut")
				}
				remountWhenClosed(t, mnt)
				got := readCounter(t, state)
				t.Logf("cut %d: highest acknowledged before the cut %d (seen after it: %d), after the remount %d", cut+1, high, late, got)
				if got < high {
					t.Fatalf("after the power cut the counter is %d, but %d was acknowledged: an acknowledged update was lost", got, high)
				}
			}
		})
	}
}

func readCounter(t *testing.T, state string) int {
	t.Helper()
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatalf("the state file after the power cut: %v", err)
	}
	s, err := parseCounter(b)
	if err != nil {
		t.Fatalf("the state file after the power cut is not a whole state (%q): %v", b, err)
	}
	return s.N
}

// remountWhenClosed waits until this process has no descriptor left on
// mnt (a release parks its record descriptors for up to a second), then
// remounts it, which replays the journal as a reboot would.
func remountWhenClosed(t *testing.T, mnt string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		open := openUnder(mnt)
		if open == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("this process still has %s open on %s", open, mnt)
		}
		time.Sleep(50 * time.Millisecond)
	}
	testfs.Remount(t, mnt)
}

// openUnder names one of this process's open files under dir, or "".
func openUnder(dir string) string {
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		if p, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && (p == dir || strings.HasPrefix(p, dir+"/")) {
			return p
		}
	}
	return ""
}

// TestReadersRuleDurable (SPEC §4.6, the readers' rule): A's bytes are
// renamed into place and A's lock released early; before A's directory
// fsync, B reads them without writing (a read-only With, then an Update
// whose function fails) and is told what it read; then the power is cut.
// After the remount the state file holds what B read: B made A's rename
// durable before it returned. On the old code B returned with A's rename
// still only in memory and the counter came back at 1.
func TestReadersRuleDurable(t *testing.T) {
	for _, reader := range []string{"with", "failed-update"} {
		for _, fsys := range powerCutFilesystems {
			t.Run(reader+"/"+fsys.name, func(t *testing.T) {
				mnt := fsys.mount(t)
				state := filepath.Join(mnt, "state.json")
				opts := []Option{WithConfigRoot(t.TempDir())}
				ctx := context.Background()
				if err := Update(ctx, state, incrementCounter, opts...); err != nil {
					t.Fatal(err)
				}
				var armed atomic.Bool
				armed.Store(true)
				seen := -1
				var bErr error
				defer hook.Set(hook.Committed, func(path string) {
					if path != state || !armed.CompareAndSwap(true, false) {
						return
					}
					// A has renamed and released; its directory fsync is next.
					read := func() error {
						b, err := os.ReadFile(state)
						if err != nil {
							return err
						}
						c, err := parseCounter(b)
						seen = c.N
						return err
					}
					if reader == "with" {
						bErr = With(ctx, state, read, opts...)
					} else {
						refused := errors.New("refused")
						bErr = Update(ctx, state, func(old []byte) ([]byte, error) {
							if err := read(); err != nil {
								return nil, err
							}
							return nil, refused
						}, opts...)
						if errors.Is(bErr, refused) {
							bErr = nil
						}
					}
					testfs.Shutdown(t, mnt)
				})()
				Update(ctx, state, incrementCounter, opts...)
				if bErr != nil || seen != 2 {
					t.Fatalf("B: read %d, %v; want 2 (A's bytes) and no error", seen, bErr)
				}
				remountWhenClosed(t, mnt)
				if got := readCounter(t, state); got != seen {
					t.Fatalf("after the power cut the counter is %d; B read %d and returned before the cut", got, seen)
				}
			})
		}
	}
}
