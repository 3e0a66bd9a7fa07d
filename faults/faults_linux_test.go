package faults

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock"
)

// The EIO rows of the fault table of issue 10 item 3: one call of the
// durable write or of the lock fails while every other call works. For
// each, Update returns an error that names the path and carries the errno;
// the state file keeps its old bytes (except where the error says the
// change was made); the lock is free or reclaimable at once; every private
// name left is one Inspect names; and once the fault clears (Clear), the
// next Update succeeds. Each case logs "fault table:" with the exact error.

const (
	oldState  = `{"n":1}`
	newState  = `{"n":2,"pad":"the new bytes of the state file"}`
	healState = `{"n":3}`
)

type env struct {
	f                  *FS
	dir, state, config string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := Mount(t)
	e := &env{f: f, dir: filepath.Join(f.Dir, "d"), config: filepath.Join(t.TempDir(), "config")}
	if err := os.Mkdir(e.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e.state = filepath.Join(e.dir, "state.json")
	if err := e.update(oldState); err != nil {
		t.Fatalf("Update before the fault: %v", err)
	}
	return e
}

func (e *env) opts() []statelock.Option {
	return []statelock.Option{statelock.WithConfigRoot(e.config), statelock.WithWait(0)}
}

func (e *env) update(next string) error {
	return statelock.Update(context.Background(), e.state, func([]byte) ([]byte, error) { return []byte(next), nil }, e.opts()...)
}

// stagingOf matches the private staging names of the durable write of base.
func stagingOf(base string) func(string) bool {
	return func(name string) bool {
		dest, ok := exactfs.StagingTarget(name)
		return ok && dest == base
	}
}

func named(base string) func(string) bool { return func(name string) bool { return name == base } }

// lockRecord matches F.lock and the staging names its records are
// published from: a descriptor opened on the staged record keeps that name
// in the layer after the rename.
func lockRecord(name string) bool {
	return name == "state.json.lock" || stagingOf("state.json.lock")(name)
}

func (e *env) checkError(t *testing.T, err error, errno syscall.Errno) {
	t.Helper()
	t.Logf("fault table: %v", err)
	t.Logf("fault table: calls failed: %v", e.f.Hits())
	if err == nil {
		t.Fatalf("the call under the fault succeeded (failed calls: %v)", e.f.Hits())
	}
	if len(e.f.Hits()) == 0 {
		t.Fatalf("the fault never struck, yet: %v", err)
	}
	if !errors.Is(err, errno) {
		t.Errorf("error %v: want errors.Is %v", err, errno)
	}
	// The path named is the state file's or one of its lock's files
	// (F.lock, a staged record, the claim) in its directory.
	if msg := err.Error(); !strings.Contains(msg, e.dir+"/") || !strings.Contains(msg, "state.json") || !strings.Contains(msg, errno.Error()) {
		t.Errorf("error does not name a path in %s of state.json and %q: %v", e.dir, errno.Error(), err)
	}
	if errors.Is(err, statelock.ErrLocked) {
		t.Errorf("a filesystem fault reported as contention: %v", err)
	}
}

// checkBytes reads the state file on the backing filesystem, beside the
// fault layer (whose rules may still fail reads).
func (e *env) checkBytes(t *testing.T, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.f.Backing, "d", "state.json"))
	if err != nil {
		t.Fatalf("state file after the fault: %v", err)
	}
	if string(b) != want {
		t.Fatalf("state file after the fault holds %q, want %q", b, want)
	}
}

// checkNamed: the lock is not held and every name in the directory is the
// state file, a file of the lock, or residue Inspect names.
func (e *env) checkNamed(t *testing.T) {
	t.Helper()
	st, err := statelock.Inspect(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("Inspect after the fault: %v", err)
	}
	t.Logf("fault table: lock after the fault: %s", st.State)
	switch st.State {
	case statelock.StateFree, statelock.StateReleased, statelock.StateStale:
	default:
		t.Errorf("lock after the fault is %s (%+v), want free, released or stale", st.State, st.Holder)
	}
	if st.Claim.Present && !st.Claim.Crashed {
		t.Errorf("transition claim after the fault: %+v", st.Claim)
	}
	known := map[string]bool{
		"state.json": true, "state.json.lock": true, "state.json.lock.transition.owner": true,
		".gjc-delete-state-lock-spare-state.json.lock.transition": true,
	}
	if st.Claim.Present {
		known["state.json.lock.transition"] = true
	}
	for _, r := range st.Residue {
		known[r.Name] = true
		t.Logf("fault table: residue named by Inspect: %s %s", r.Kind, r.Name)
	}
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, de := range ents {
		if !known[de.Name()] {
			t.Errorf("%s is left in the directory and Inspect does not name it", de.Name())
		}
	}
}

// checkHeals clears the fault: the lock is taken at once, and the next
// Update writes.
func (e *env) checkHeals(t *testing.T) {
	t.Helper()
	e.f.Clear()
	h, err := statelock.TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatalf("TryLock once the fault cleared: %v", err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatalf("Unlock once the fault cleared: %v", err)
	}
	if err := e.update(healState); err != nil {
		t.Fatalf("Update once the fault cleared: %v", err)
	}
	e.checkBytes(t, healState)
	st, err := statelock.Inspect(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range st.Residue {
		t.Logf("fault table: residue after healing: %s %s", r.Kind, r.Name)
	}
}

// TestFaultEIOUpdate fails one step of Update's durable write.
func TestFaultEIOUpdate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		rules []Rule
		// after is what the state file holds after the failed Update:
		// the old bytes, unless the error says the change was made.
		after string
		// code is the exactfs code the error must carry.
		code exactfs.Code
	}{
		{"write-staged", []Rule{{Op: OpWrite, Match: stagingOf("state.json"), Errno: syscall.EIO}}, oldState, exactfs.CodeIOError},
		{"write-staged-and-unlink", []Rule{
			{Op: OpWrite, Match: stagingOf("state.json"), Errno: syscall.EIO},
			{Op: OpUnlink, Match: stagingOf("state.json"), Errno: syscall.EIO},
		}, oldState, exactfs.CodeIOError},
		{"fsync-staged", []Rule{{Op: OpFsync, Match: stagingOf("state.json"), Errno: syscall.EIO}}, oldState, exactfs.CodeDurabilityFailed},
		{"rename-not-made", []Rule{{Op: OpRename, Match: stagingOf("state.json"), Errno: syscall.EIO}}, oldState, exactfs.CodeIOError},
		{"read-state", []Rule{{Op: OpRead, Match: named("state.json"), Errno: syscall.EIO}}, oldState, exactfs.CodeIOError},
		{"fsync-directory", []Rule{{Op: OpFsyncDir, Match: named("d"), Errno: syscall.EIO}}, newState, exactfs.CodeDurabilityFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, r := range tc.rules {
				e.f.Fail(r)
			}
			err := e.update(newState)
			e.checkError(t, err, syscall.EIO)
			if got := exactfs.CodeOf(err); got != tc.code {
				t.Errorf("code %q, want %q: %v", got, tc.code, err)
			}
			if strings.HasPrefix(tc.name, "write-staged-and-unlink") && !strings.Contains(err.Error(), "residue left at "+e.dir+"/.state.json.") {
				t.Errorf("the staged file could not be removed, and the error does not name it: %v", err)
			}
			if tc.after == newState && !strings.Contains(err.Error(), "the change is made") {
				t.Errorf("the change was made, and the error does not say so: %v", err)
			}
			e.checkBytes(t, tc.after)
			e.checkNamed(t)
			e.checkHeals(t)
		})
	}
}

// TestFaultEIORenameMade: the rename into place is made, and then reported
// failed (as a network or FUSE filesystem may, whose reply is lost). The
// durable write settles what happened: either it reports the commit (the
// state file holds the new bytes, and Update returns nil or an error that
// says so), or nothing was made. It must never report a failure while the
// new bytes are in place without saying so: the caller would retry a
// change that is already made.
func TestFaultEIORenameMade(t *testing.T) {
	e := newEnv(t)
	e.f.Fail(Rule{Op: OpRename, Match: stagingOf("state.json"), Errno: syscall.EIO, Done: true})
	err := e.update(newState)
	t.Logf("fault table: %v", err)
	t.Logf("fault table: calls failed: %v", e.f.Hits())
	if len(e.f.Hits()) == 0 {
		t.Fatal("the fault never struck")
	}
	b, rerr := os.ReadFile(filepath.Join(e.f.Backing, "d", "state.json"))
	if rerr != nil {
		t.Fatal(rerr)
	}
	if string(b) == newState && err != nil && !errors.Is(err, exactfs.ErrDurabilityFailed) {
		t.Errorf("the new bytes are in place, and Update says it failed without saying the change was made: %v", err)
	}
	if string(b) != newState && string(b) != oldState {
		t.Errorf("state file holds %q, neither the old nor the new bytes", b)
	}
	e.checkNamed(t)
	e.checkHeals(t)
}

// TestFaultEIOLock fails the lock's own files: at acquire (the rewrite of
// the tombstone into our record) and at release (every change in the
// directory). The lock must end free, or reclaimable by the next caller at
// once.
func TestFaultEIOLock(t *testing.T) {
	// The first write only (the restore of the tombstone works), and
	// every write (the restore fails too).
	for name, times := range map[string]int{"acquire-first-write": 1, "acquire-every-write": 0} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			e.f.Fail(Rule{Op: OpWrite, Match: lockRecord, Errno: syscall.EIO, Times: times})
			err := e.update(newState)
			e.checkError(t, err, syscall.EIO)
			e.checkBytes(t, oldState)
			e.checkNamed(t)
			e.checkHeals(t)
		})
	}
	t.Run("release", func(t *testing.T) {
		e := newEnv(t)
		h, err := statelock.Lock(context.Background(), e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range []Op{OpWrite, OpCreate, OpMkdir, OpRename, OpUnlink, OpRmdir} {
			e.f.Fail(Rule{Op: op, Errno: syscall.EIO})
		}
		err = h.Unlock()
		t.Logf("fault table: Unlock: %v", err)
		t.Logf("fault table: calls failed: %v", e.f.Hits())
		if err == nil || !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), "state.json.lock") {
			t.Fatalf("Unlock under the fault: %v; want an EIO error naming state.json.lock", err)
		}
		e.checkBytes(t, oldState)
		e.checkNamed(t)
		e.checkHeals(t)
	})
}

// TestAbort proves the way out that TestMain's watchdog takes: after
// abort, calls on the layer fail at once with ENOTCONN instead of waiting
// for the server, and the cleanup still unmounts.
func TestAbort(t *testing.T) {
	f := Mount(t)
	if err := os.WriteFile(filepath.Join(f.Dir, "x"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(f.Dir, "x")); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("stat after abort: %v, want ENOTCONN", err)
	}
}
