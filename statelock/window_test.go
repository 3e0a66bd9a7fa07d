//go:build unix

package statelock

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
)

// probe answers kill(pid, 0) as told, and asks the system for the rest.
type probe struct {
	liveness.System
	signal func(pid int) error
}

func (p probe) Signal(pid int) error { return p.signal(pid) }

func probeSays(err error) Option {
	return withProber(probe{signal: func(int) error { return err }})
}

// fileState is what a test asserts survived: inode and bytes.
type fileState struct {
	ino  uint64
	data []byte
}

func stateOf(t *testing.T, p string) fileState {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fileState{fi.Sys().(*syscall.Stat_t).Ino, mustRead(t, p)}
}

func (f fileState) assertSame(t *testing.T, p string) {
	t.Helper()
	if got := stateOf(t, p); got.ino != f.ino || !bytes.Equal(got.data, f.data) {
		t.Fatalf("%s changed: inode %d→%d, bytes %q→%q", p, f.ino, got.ino, f.data, got.data)
	}
}

// tsRecord writes a record the way a TypeScript peer does (no evidence
// fields, so it is judged by the pid rules), aged by age.
func (e *testEnv) tsRecord(t *testing.T, pid int, host string, age time.Duration) fileState {
	t.Helper()
	r := &Record{Pid: int64(pid), StartTime: "12345", Token: exactfs.NewUUID(), HostID: host}
	if err := os.WriteFile(e.lock, r.Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	if age > 0 {
		old := time.Now().Add(-age)
		os.Chtimes(e.lock, old, old)
	}
	return stateOf(t, e.lock)
}

func TestLiveOwnerNeverReclaimed(t *testing.T) {
	cases := []struct {
		name string
		host func(e *testEnv) string
		opt  Option
	}{
		{"live pid, 10 minutes old", func(e *testEnv) string { return e.host.ID }, nil},
		{"probe EPERM", func(e *testEnv) string { return e.host.ID }, probeSays(syscall.EPERM)},
		{"probe EIO", func(e *testEnv) string { return e.host.ID }, probeSays(syscall.EIO)},
		{"no host id, dead pid", func(*testEnv) string { return "" }, probeSays(syscall.ESRCH)},
		{"foreign host, dead pid", func(*testEnv) string { return "f00d" }, probeSays(syscall.ESRCH)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			// Our parent is alive and its start time is not "12345"; the
			// record has no format, so a live pid cannot be proved reused.
			before := e.tsRecord(t, os.Getppid(), c.host(e), 10*time.Minute)
			opts := e.opts()
			if c.opt != nil {
				opts = append(opts, c.opt)
			}
			_, err := TryLock(e.state, opts...)
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("TryLock: %v", err)
			}
			t.Log(err)
			before.assertSame(t, e.lock)
		})
	}
}

func TestDeadOwnerReclaimed(t *testing.T) {
	for _, c := range []struct {
		name string
		host func(e *testEnv) string
		opts []Option
	}{
		{"this host", func(e *testEnv) string { return e.host.ID }, nil},
		{"legacy id of this host", func(e *testEnv) string { return e.host.LegacyID }, nil},
		{"no host id, host-local option", func(*testEnv) string { return "" }, []Option{WithHostLocal(true)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.tsRecord(t, 4242, c.host(e), 0)
			h, err := TryLock(e.state, e.opts(append(c.opts, probeSays(syscall.ESRCH))...)...)
			if err != nil {
				t.Fatal(err)
			}
			h.Unlock()
		})
	}
}

// A dead owner's record replaced by a live successor after the verdict:
// the successor survives byte- and inode-identical, then excludes the next
// contender.
func TestStaleReplacedAfterInspection(t *testing.T) {
	e := newEnv(t)
	e.tsRecord(t, 4242, e.host.ID, 0)
	var successor fileState
	defer hook.Set(hook.LockAfterStaleInspection, hook.Once(func(string) {
		os.Remove(e.lock)
		e.tsRecord(t, os.Getppid(), e.host.ID, 0)
		successor = stateOf(t, e.lock)
	}))()
	dead4242 := withProber(probe{signal: func(pid int) error {
		if pid == 4242 {
			return syscall.ESRCH
		}
		return nil
	}})
	if _, err := TryLock(e.state, e.opts(dead4242)...); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock: %v", err)
	}
	successor.assertSame(t, e.lock)
	if _, err := TryLock(e.state, e.opts(dead4242)...); !errors.Is(err, ErrLocked) {
		t.Fatalf("second contender: %v", err)
	}
	successor.assertSame(t, e.lock)
}

// A base writer (plain O_EXCL create, no claim) deletes and recreates
// F.lock right before the removal: it keeps its lock.
func TestBaseWriterRecreatesBeforeRemoval(t *testing.T) {
	e := newEnv(t)
	e.tsRecord(t, 4242, e.host.ID, 0)
	var successor fileState
	defer hook.Set(hook.LockBeforeStaleRemoval, hook.Once(func(string) {
		os.Remove(e.lock)
		r := &Record{Pid: int64(os.Getppid()), StartTime: "1", Token: "base", HostID: e.host.ID}
		f, err := os.OpenFile(e.lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			t.Error(err)
			return
		}
		f.Write(r.Encode())
		f.Close()
		successor = stateOf(t, e.lock)
	}))()
	dead4242 := withProber(probe{signal: func(pid int) error {
		if pid == 4242 {
			return syscall.ESRCH
		}
		return nil
	}})
	if _, err := TryLock(e.state, e.opts(dead4242)...); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock: %v", err)
	}
	successor.assertSame(t, e.lock)
}

// withTimeout fails the test if f does not return in time (a FIFO opened
// for reading without O_NONBLOCK would hang forever).
func withTimeout(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("call did not return within %s", d)
	}
}

func TestUnsafeLockPathTypes(t *testing.T) {
	cases := map[string]struct {
		plant func(t *testing.T, e *testEnv, target string)
		is    error
	}{
		"symlink to a file": {func(t *testing.T, e *testEnv, target string) { os.Symlink(target, e.lock) }, exactfs.ErrReparsePoint},
		"dangling symlink":  {func(t *testing.T, e *testEnv, target string) { os.Symlink(target+".none", e.lock) }, exactfs.ErrReparsePoint},
		"FIFO":              {func(t *testing.T, e *testEnv, target string) { syscall.Mkfifo(e.lock, 0o600) }, exactfs.ErrNotRegularFile},
		"socket": {func(t *testing.T, e *testEnv, target string) {
			l, err := net.Listen("unix", e.lock)
			if err != nil {
				t.Skip(err)
			}
			t.Cleanup(func() { l.Close() })
		}, exactfs.ErrNotRegularFile},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			target := filepath.Join(t.TempDir(), "precious")
			os.WriteFile(target, []byte("do not touch"), 0o600)
			c.plant(t, e, target)
			withTimeout(t, 10*time.Second, func() {
				_, err := Lock(context.Background(), e.state, e.opts(WithWait(time.Second))...)
				var le *LockError
				if !errors.As(err, &le) || le.Code != ReasonUnsafePathType || !errors.Is(le.Err, c.is) {
					t.Errorf("Lock: %v", err)
				}
				t.Log(err)
			})
			if b, _ := os.ReadFile(target); string(b) != "do not touch" {
				t.Fatalf("target changed: %q", b)
			}
			if _, err := os.Lstat(e.lock); err != nil {
				t.Fatalf("the planted object was removed: %v", err)
			}
		})
	}
}

// A regular F.lock swapped for a symlink or a FIFO right after the type
// decision is refused, without following or blocking.
func TestSwapAfterTypeDecision(t *testing.T) {
	for name, swap := range map[string]func(e *testEnv, target string){
		"symlink": func(e *testEnv, target string) { os.Symlink(target, e.lock) },
		"FIFO":    func(e *testEnv, target string) { syscall.Mkfifo(e.lock, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.tsRecord(t, os.Getppid(), e.host.ID, 0)
			target := filepath.Join(t.TempDir(), "precious")
			os.WriteFile(target, []byte("do not touch"), 0o600)
			defer hook.Set(hook.LockAfterTypeDecision, hook.Once(func(string) {
				os.Remove(e.lock)
				swap(e, target)
			}))()
			withTimeout(t, 10*time.Second, func() {
				_, err := TryLock(e.state, e.opts()...)
				var le *LockError
				if !errors.As(err, &le) || le.Code != ReasonUnsafePathType {
					t.Errorf("TryLock: %v", err)
				}
			})
			if b, _ := os.ReadFile(target); string(b) != "do not touch" {
				t.Fatalf("target changed: %q", b)
			}
		})
	}
}

// faultsFor makes the owner-record write of F.lock fail through f and, with
// inPlace, makes records be created in place (the reference's way, used
// where there is no no-replace rename) instead of published whole.
func faultsFor(e *testEnv, inPlace bool, f func() error) func(point, path string) error {
	return func(point, path string) error {
		if point == hook.LockCreateInPlace && inPlace {
			return errors.New("forced")
		}
		if point == hook.LockOwnerRecordWrite && filepath.Base(path) == filepath.Base(e.lock) {
			return f()
		}
		return nil
	}
}

func assertNoStaging(t *testing.T, e *testEnv) {
	t.Helper()
	ents, _ := os.ReadDir(e.dir)
	for _, en := range ents {
		if strings.HasSuffix(en.Name(), ".staging") {
			t.Errorf("staging residue left: %s", en.Name())
		}
	}
}

// The owner record's write fails half way: only our own inode is removed
// (published: it never had the name; in place: retracted by identity).
func TestOwnerWriteFaultRetractsOwnRecord(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		t.Run("inPlace="+strconv.FormatBool(inPlace), func(t *testing.T) {
			e := newEnv(t)
			f := faultsFor(e, inPlace, func() error { return syscall.EIO })
			faultAt.Store(&f)
			defer faultAt.Store(nil)
			_, err := TryLock(e.state, e.opts()...)
			if !errors.Is(err, syscall.EIO) {
				t.Fatalf("TryLock: %v", err)
			}
			if _, err := os.Lstat(e.lock); !os.IsNotExist(err) {
				t.Fatalf("our failed record was left at the name: %v", err)
			}
			assertNoStaging(t, e)
			faultAt.Store(nil)
			h, err := TryLock(e.state, e.opts()...)
			if err != nil {
				t.Fatalf("after the fault: %v", err)
			}
			h.Unlock()
		})
	}
}

// ... and when a successor took the path in between, the successor survives.
func TestOwnerWriteFaultSuccessorSurvives(t *testing.T) {
	for _, inPlace := range []bool{false, true} {
		t.Run("inPlace="+strconv.FormatBool(inPlace), func(t *testing.T) {
			e := newEnv(t)
			var successor fileState
			f := faultsFor(e, inPlace, func() error {
				// Our record (if in place: empty) is reclaimed by someone
				// and the path retaken.
				os.Remove(e.lock)
				e.tsRecord(t, os.Getppid(), e.host.ID, 0)
				successor = stateOf(t, e.lock)
				return syscall.EIO
			})
			faultAt.Store(&f)
			defer faultAt.Store(nil)
			if _, err := TryLock(e.state, e.opts()...); !errors.Is(err, syscall.EIO) {
				t.Fatalf("TryLock: %v", err)
			}
			successor.assertSame(t, e.lock)
			assertNoStaging(t, e)
		})
	}
}

// A successor that takes the name while our record is being published (no
// fault) keeps it: the no-replace rename refuses, and we see contention.
func TestPublishLosesToSuccessor(t *testing.T) {
	e := newEnv(t)
	var successor fileState
	planted := false
	defer hook.Set(hook.LockOwnerRecordWrite, func(p string) {
		if planted || filepath.Base(p) != filepath.Base(e.lock) {
			return
		}
		planted = true
		e.tsRecord(t, os.Getppid(), e.host.ID, 0)
		successor = stateOf(t, e.lock)
	})()
	if _, err := TryLock(e.state, e.opts()...); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock: %v", err)
	}
	successor.assertSame(t, e.lock)
	assertNoStaging(t, e)
}

// Release finds its record replaced: it fails loudly, the successor stays;
// and an Update whose operation failed reports both errors.
func TestReleaseFindsRecordReplaced(t *testing.T) {
	e := newEnv(t)
	var successor fileState
	defer hook.Set(hook.LockAfterOwnerValidation, hook.Once(func(string) {
		os.Remove(e.lock)
		e.tsRecord(t, os.Getppid(), e.host.ID, 0)
		successor = stateOf(t, e.lock)
	}))()
	opErr := errors.New("operation failed")
	err := Update(context.Background(), e.state, func([]byte) ([]byte, error) { return nil, opErr }, e.opts()...)
	var le *LockError
	if !errors.Is(err, opErr) || !errors.As(err, &le) || le.Code != ReasonReleaseFailed {
		t.Fatalf("Update: %v", err)
	}
	t.Log(err)
	successor.assertSame(t, e.lock)
	if _, err := os.Lstat(e.state); !os.IsNotExist(err) {
		t.Fatal("a failed operation wrote the state file")
	}
}

// A crashed transition claim: reclaimed when its sidecar names a dead,
// host-qualified owner; kept when the owner is live, the sidecar
// unreadable, or the directory not empty.
func TestCrashedTransitionClaim(t *testing.T) {
	setup := func(t *testing.T, pid int, sidecar []byte, extra bool) *testEnv {
		e := newEnv(t)
		os.Mkdir(e.claim, 0o700)
		if extra {
			os.WriteFile(filepath.Join(e.claim, "x"), nil, 0o600)
		}
		if sidecar != nil {
			os.WriteFile(e.sidecar, sidecar, 0o600)
		}
		old := time.Now().Add(-5 * time.Second)
		os.Chtimes(e.sidecar, old, old)
		os.Chtimes(e.claim, old, old)
		return e
	}
	rec := func(e *testEnv, pid int) []byte {
		return (&Record{Pid: int64(pid), StartTime: "1", Token: "t", HostID: e.host.ID}).Encode()
	}
	dead := probeSays(syscall.ESRCH)
	t.Run("dead sidecar", func(t *testing.T) {
		e := setup(t, 0, nil, false)
		os.WriteFile(e.sidecar, rec(e, 4242), 0o600)
		old := time.Now().Add(-5 * time.Second)
		os.Chtimes(e.sidecar, old, old)
		h, err := TryLock(e.state, e.opts(dead)...)
		if err != nil {
			t.Fatal(err)
		}
		h.Unlock()
		assertSteadyState(t, e, true)
	})
	// A sidecar torn by a writer killed between its truncate and its write
	// (the reference rewrites in place): empty or cut short, open for
	// writing by nobody, so its writer is dead (judgeMalformed).
	for name, b := range map[string][]byte{"abandoned sidecar, empty": nil, "abandoned sidecar, torn": []byte(`{"pid":12,"sta`)} {
		t.Run(name, func(t *testing.T) {
			e := setup(t, 0, nil, false)
			os.WriteFile(e.sidecar, b, 0o600)
			// A minute, not 5 s: its mtime is set back before its birth,
			// so it is not provably written after it was created, and SPEC
			// §4.4 keeps such a record for 30 s (TestAbandonedWriteAges).
			old := time.Now().Add(-time.Minute)
			os.Chtimes(e.sidecar, old, old)
			if !kernelProvesNoWriter(t) {
				// Without the lease probe (macOS, the BSDs, the portable
				// build) nothing proves its writer gone: the claim and the
				// sidecar are kept as they are (Recover says so).
				side := stateOf(t, e.sidecar)
				if _, err := TryLock(e.state, e.opts()...); !errorsIsLocked(err) {
					t.Fatalf("TryLock over a claim nothing proves abandoned: %v", err)
				}
				if fi, err := os.Lstat(e.claim); err != nil || !fi.IsDir() {
					t.Fatalf("the claim directory was not kept: %v", err)
				}
				side.assertSame(t, e.sidecar)
				return
			}
			h, err := TryLock(e.state, e.opts()...)
			if err != nil {
				t.Fatal(err)
			}
			h.Unlock()
			assertSteadyState(t, e, true)
		})
	}
	t.Run("tombstone sidecar", func(t *testing.T) {
		e := setup(t, 0, nil, false)
		os.WriteFile(e.sidecar, tombstone("t", e.host.ID).Encode(), 0o600)
		old := time.Now().Add(-5 * time.Second)
		os.Chtimes(e.sidecar, old, old)
		h, err := TryLock(e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		h.Unlock()
	})
	for name, c := range map[string]struct {
		sidecar func(e *testEnv) []byte
		extra   bool
	}{
		"live sidecar": {func(e *testEnv) []byte { return rec(e, os.Getppid()) }, false},
		// Unreadable while its writer still holds it open for writing (the
		// reference truncates and writes through one handle); without a
		// writer it is an abandoned write: see "abandoned sidecar" above.
		"unreadable sidecar, being written": {func(*testEnv) []byte { return []byte("{") }, false},
		"no sidecar":                        {func(*testEnv) []byte { return nil }, false},
		"non-empty directory":               {func(e *testEnv) []byte { return rec(e, 4242) }, true},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			os.Mkdir(e.claim, 0o700)
			if c.extra {
				os.WriteFile(filepath.Join(e.claim, "x"), nil, 0o600)
			}
			if b := c.sidecar(e); b != nil {
				os.WriteFile(e.sidecar, b, 0o600)
			}
			if strings.HasSuffix(name, "being written") {
				w, err := os.OpenFile(e.sidecar, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			}
			old := time.Now().Add(-5 * time.Second)
			os.Chtimes(e.sidecar, old, old)
			os.Chtimes(e.claim, old, old)
			opts := e.opts()
			if name == "non-empty directory" {
				opts = append(opts, dead)
			}
			_, err := TryLock(e.state, opts...)
			var le *LockError
			if !errors.As(err, &le) || le.Code != ReasonTransitionClaimTimeout || !errors.Is(err, ErrLocked) {
				t.Fatalf("TryLock: %v", err)
			}
			if fi, err := os.Lstat(e.claim); err != nil || !fi.IsDir() {
				t.Fatalf("claim directory removed: %v", err)
			}
		})
	}
}

// A killed holder's lock is reclaimed at once, reaped or not (a zombie has
// closed its descriptors, so its kernel lock is gone).
func TestKilledHolderReclaimedPromptly(t *testing.T) {
	for _, reap := range []bool{true, false} {
		t.Run("reaped="+strconv.FormatBool(reap), func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			holder := workerCmd(ctx, "hold", "STATELOCK_STATE="+e.state, "STATELOCK_CONFIG="+e.configRoot)
			startAndWaitLine(t, holder, "H", 30*time.Second)
			if _, err := TryLock(e.state, e.opts()...); !errors.Is(err, ErrLocked) {
				t.Fatalf("TryLock against a live holder: %v", err)
			}
			holder.Process.Signal(syscall.SIGKILL)
			if reap {
				holder.Wait()
			} else {
				defer holder.Wait()
				// Wait until it is a zombie: its state in /proc turns Z.
				for i := 0; i < 500; i++ {
					b, _ := os.ReadFile("/proc/" + strconv.Itoa(holder.Process.Pid) + "/stat")
					if bytes.Contains(b, []byte(") Z ")) {
						break
					}
					time.Sleep(2 * time.Millisecond)
				}
			}
			start := time.Now()
			h, err := Lock(context.Background(), e.state, e.opts(WithWait(20*time.Second))...)
			if err != nil {
				t.Fatal(err)
			}
			took := time.Since(start)
			h.Unlock()
			// Far below the budget: the first look proves the holder dead.
			// (Generous for a loaded CI machine; it takes milliseconds.)
			if took > 2*time.Second {
				t.Fatalf("reclaim took %s", took)
			}
			t.Logf("reclaimed in %s", took)
		})
	}
}

// The power-loss rule (SPEC §4.7): an empty or torn record last written
// before the current boot is reclaimed; a young one is a record being
// written and is kept.
func TestPowerLossRule(t *testing.T) {
	for name, c := range map[string]struct {
		data []byte
		age  time.Duration
		ok   bool
	}{
		"empty, before boot":                {nil, 1000 * time.Hour, true},
		"torn, before boot":                 {[]byte(`{"pid":12,"sta`), 1000 * time.Hour, true},
		"empty, young":                      {nil, 0, false},
		"torn, a minute old, being written": {[]byte(`{"pid":12,"sta`), time.Minute, false},
		// Beyond the power-loss rule: no process has it open for writing,
		// so its writer died while writing it (judgeMalformed).
		"torn, a minute old, abandoned": {[]byte(`{"pid":12,"sta`), time.Minute, true},
		// SPEC §4.4 (decided 2026-12-03): a record not provably written
		// after its birth (here its mtime is set back before it) may be
		// one whose creator is still inside open(O_CREAT), and is kept for
		// 30 s; one written after its birth is reclaimed after 1 s
		// (TestAbandonedWriteAges).
		"empty, 5s old, not written after birth": {nil, 5 * time.Second, false},
		"empty, a minute old, abandoned":         {nil, time.Minute, true},
		"released:false, 1 min old":              {[]byte(`{"pid":4242,"start_time":"1","token":"t","owner_host_id":"HOST","released":false}`), time.Minute, true},
		"released:false, young":                  {[]byte(`{"pid":4242,"start_time":"1","token":"t","owner_host_id":"HOST","released":false}`), 0, false},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			data := bytes.ReplaceAll(c.data, []byte("HOST"), []byte(e.host.ID))
			os.WriteFile(e.lock, data, 0o600)
			if strings.HasSuffix(name, "being written") {
				w, err := os.OpenFile(e.lock, os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Close()
			}
			old := time.Now().Add(-c.age)
			os.Chtimes(e.lock, old, old)
			before := stateOf(t, e.lock)
			ok := c.ok
			if strings.HasSuffix(name, "abandoned") && !kernelProvesNoWriter(t) {
				// The abandoned-write rule needs the lease probe's proof
				// that nobody writes it; without one (macOS, the BSDs, the
				// portable build) the record is kept.
				ok = false
			}
			h, err := TryLock(e.state, e.opts(probeSays(syscall.ESRCH))...)
			if ok {
				if err != nil {
					t.Fatal(err)
				}
				h.Unlock()
				return
			}
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("TryLock: %v", err)
			}
			before.assertSame(t, e.lock)
		})
	}
}

// A regular file at F.lock.transition is the claim of a superseded
// protocol: reclaimed by the exact-identity rules when its owner is dead,
// kept when alive.
func TestSupersededRegularFileClaim(t *testing.T) {
	for _, dead := range []bool{true, false} {
		t.Run("dead="+strconv.FormatBool(dead), func(t *testing.T) {
			e := newEnv(t)
			pid := os.Getppid()
			if dead {
				pid = 4242
			}
			os.WriteFile(e.claim, (&Record{Pid: int64(pid), StartTime: "1", Token: "t", HostID: e.host.ID}).Encode(), 0o600)
			before := stateOf(t, e.claim)
			dead4242 := withProber(probe{signal: func(p int) error {
				if p == 4242 {
					return syscall.ESRCH
				}
				return nil
			}})
			h, err := TryLock(e.state, e.opts(dead4242)...)
			if dead {
				if err != nil {
					t.Fatal(err)
				}
				h.Unlock()
				return
			}
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("TryLock: %v", err)
			}
			before.assertSame(t, e.claim)
		})
	}
}

// goRecord is a record in the shape an exactfs holder writes (kernel
// evidence fields), for this process on this host and boot.
func (e *testEnv) goRecord(t *testing.T) []byte {
	t.Helper()
	self, err := liveness.Self()
	if err != nil {
		t.Fatal(err)
	}
	return (&Record{Pid: int64(self.Pid), StartTime: self.StartTime, StartTimeFormat: self.StartTimeFormat,
		Token: exactfs.NewUUID(), HostID: e.host.ID, PidfdIno: self.PidfdIno, PidNS: self.PidNS, BootID: self.BootID}).Encode()
}

// The kernel rule judges the inode the bytes were read from, not the
// pathname: a Go record nobody holds a kernel lock on is dead even though
// its pid (ours) is alive; when a live holder (with its kernel lock) takes
// the pathname after that verdict, it survives and excludes the next one.
func TestKernelVerdictBoundToCapturedInode(t *testing.T) {
	if !ofdSupported {
		t.Skip("no OFD locks on this platform")
	}
	e := newEnv(t)
	os.WriteFile(e.lock, e.goRecord(t), 0o600)
	st, err := Inspect(e.state, e.opts()...)
	if err != nil || st.State != StateStale || !st.Holder.Kernel {
		t.Fatalf("an unlocked Go record of a live pid: %+v %+v %v", st, st.Holder, err)
	}
	var successor fileState
	var live *os.File
	defer func() {
		if live != nil {
			live.Close()
		}
	}()
	defer hook.Set(hook.LockAfterStaleInspection, hook.Once(func(string) {
		os.Remove(e.lock)
		f, err := os.OpenFile(e.lock, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
		if err != nil {
			t.Error(err)
			return
		}
		if err := ofdLock(f); err != nil {
			t.Error(err)
		}
		f.Write(e.goRecord(t))
		live = f
		successor = stateOf(t, e.lock)
	}))()
	if _, err := TryLock(e.state, e.opts()...); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock: %v", err)
	}
	successor.assertSame(t, e.lock)
	_, err = TryLock(e.state, e.opts()...)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "kernel lock") {
		t.Fatalf("next contender: %v", err)
	}
	successor.assertSame(t, e.lock)
	// The holder's descriptor goes away: dead at once.
	live.Close()
	live = nil
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	h.Unlock()
}
