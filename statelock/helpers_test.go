package statelock

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// testEnv is one state file in a private directory with a private config
// root, so tests never touch the user's host identity.
type testEnv struct {
	dir, state, lock, claim, sidecar, configRoot string
	host                                         liveness.HostIdentity
	extra                                        []Option // given to every call of opts (withPolicy)
}

func newEnv(t testing.TB) *testEnv {
	t.Helper()
	base := t.TempDir()
	return newEnvAt(t, filepath.Join(base, "d"), filepath.Join(base, "config"))
}

// newEnvAt is newEnv with the state file's directory (made here) and the
// config root where the caller says (fault tests put the directory on a
// loop mount and the config root off it).
func newEnvAt(t testing.TB, dir, configRoot string) *testEnv {
	t.Helper()
	e := &testEnv{dir: dir, configRoot: configRoot}
	// Before the directory goes (cleanups run last first): a record this
	// process keeps (sticky.go) is released while it is still there.
	t.Cleanup(letGoKept)
	if err := os.Mkdir(e.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	e.state = filepath.Join(e.dir, "state.json")
	e.lock = e.state + ".lock"
	e.claim = e.state + ".lock.transition"
	e.sidecar = e.claim + ".owner"
	h, err := liveness.LoadHostIdentity(e.configRoot)
	if err != nil {
		t.Fatal(err)
	}
	e.host = h
	return e
}

func (e *testEnv) opts(extra ...Option) []Option {
	return append(append([]Option{WithConfigRoot(e.configRoot)}, e.extra...), extra...)
}

func mustRead(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func errorsIsLocked(err error) bool { return errors.Is(err, ErrLocked) }

// waitingSeats counts the Go waiters seated (WAITING) in the mailbox of
// e's lock, 0 when there is none.
func waitingSeats(e *testEnv) int { return seatsWaiting(e.dir, filepath.Base(e.lock)) }

// seatsWaiting counts the WAITING seats of lockName's mailbox in dir.
func seatsWaiting(dir, lockName string) int {
	d, err := exactfs.OpenDir(dir)
	if err != nil {
		return 0
	}
	defer d.Close()
	mb, err := wake.Open(d, lockName, false)
	if err != nil {
		return 0
	}
	defer mb.Close()
	return mb.Waiting()
}

// testQueue is the waiter queue every call of these tests uses, with
// newConfig's default knobs.
var testQueue = wake.NewQueue(queueBase)
