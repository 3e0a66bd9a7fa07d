//go:build linux && !exactfs_portable

package statelock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// A mapped mailbox whose name is gone (removed by a person, or a test's
// cleanup, while the registry still maps it for its idle second) is stale:
// the next waiter maps a fresh one. The registry's look compared the
// name's identity before checking that the lstat had succeeded, and a
// waiter in a process that had used the mailbox within the second died of
// a nil dereference (seen in CI, TestGroupCommitProcessesLoseNoUpdate).
func TestMailboxNameGoneWhileMapped(t *testing.T) {
	requireCohort(t)
	e := newEnv(t)
	l, err := newLocker(e.state, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	mb, done := l.mailbox(true)
	if mb == nil {
		t.Fatal("no mailbox")
	}
	done() // mapped, unused, within its idle time
	name, _ := wake.Name(l.lockName)
	if err := os.Remove(filepath.Join(e.dir, name)); err != nil {
		t.Fatal(err)
	}
	mb2, done2 := l.mailbox(true)
	if mb2 == nil {
		t.Fatal("no mailbox after the old one's name went")
	}
	defer done2()
	if mb2 == mb {
		t.Fatal("the registry handed back the mailbox whose name is gone")
	}
}
