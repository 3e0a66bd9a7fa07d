//go:build linux

package statelock

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/exactfs/exactfs/internal/testfs"
)

// Root's one-off calls in a directory a user owns: the lock already gives
// its records to the directory's owner (chownForDir); what else root makes
// there must be the user's too, or the user's own processes are locked out.

const rootAdversaryUID = 4311

func uidOf(t *testing.T, p string) uint32 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Uid
}

// TestAdversaryRootUpdateNewFileIsTheDirOwners: root's Update of a state
// file that does not exist yet, in a directory uid 4311 owns, leaves the
// lock records uid 4311's (chownForDir) but the new state file root's, 0600:
// the user's own Update then fails with permission denied on every call.
// Reproduce as root: mkdir d; chown 4311 d; exactfs update d/s.json -- echo x;
// then as uid 4311: exactfs update d/s.json -- cat  → exit 74.
func TestAdversaryRootUpdateNewFileIsTheDirOwners(t *testing.T) {
	testfs.RequireRoot(t)
	e := newEnv(t)
	if err := os.Chown(e.dir, rootAdversaryUID, rootAdversaryUID); err != nil {
		t.Fatal(err)
	}
	if err := Update(context.Background(), e.state, func([]byte) ([]byte, error) { return []byte("x"), nil }, e.opts()...); err != nil {
		t.Fatal(err)
	}
	if got := uidOf(t, e.lock); got != rootAdversaryUID {
		t.Fatalf("lock record is uid %d's, want %d's", got, rootAdversaryUID)
	}
	if got := uidOf(t, e.state); got != rootAdversaryUID {
		t.Errorf("root's Update made the new state file uid %d's in a directory of uid %d: the user can no longer update it", got, rootAdversaryUID)
	}
}

// TestAdversaryRootMakeDirIsTheParentOwners: WithMakeDir run as root under
// a directory uid 4311 owns makes the missing directories root's, 0700, and
// so every record in them root's (chownForDir follows the new directory):
// the user cannot even open the directory afterwards. (The exactfs command
// makes them itself, cmd/exactfs/mkdir_unix.go; library callers still get
// root's.)
func TestAdversaryRootMakeDirIsTheParentOwners(t *testing.T) {
	testfs.RequireRoot(t)
	e := newEnv(t)
	if err := os.Chown(e.dir, rootAdversaryUID, rootAdversaryUID); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(e.dir, "sub", "deeper", "s.json")
	h, err := Lock(context.Background(), state, e.opts(WithMakeDir(true))...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(filepath.Dir(state)), filepath.Dir(state), state + ".lock"} {
		if got := uidOf(t, p); got != rootAdversaryUID {
			t.Errorf("%s is uid %d's, want the user's (%d)", p, got, rootAdversaryUID)
		}
	}
}
