package store

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

// Test helpers shared by the Unix and the Windows test binaries.

// withProbe makes the lease judge owners with p (tests of reclaim rules).
func withProbe(p liveness.Prober) LeaseOption { return func(c *leaseConfig) { c.probe = p } }

// withEmptyAge sets the age at which an empty lock file is reclaimed.
func withEmptyAge(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.emptyAge = d } }

// withoutAttestation makes the lease write records that claim no kernel
// lock, as a TypeScript peer's: its owner is judged by the pid rules,
// which a probe can steer.
func withoutAttestation() LeaseOption { return func(c *leaseConfig) { c.noAttestation = true } }

// goneProbe answers ESRCH for one pid and asks the system otherwise.
type goneProbe struct {
	liveness.System
	pid int
}

func (p goneProbe) Signal(pid int) error {
	if pid == p.pid {
		return syscall.ESRCH
	}
	return p.System.Signal(pid)
}

// newStore opens a fresh store in a temporary directory.
func newStore(t testing.TB) *Store {
	t.Helper()
	testPlatform(t)
	s, err := Open(filepath.Join(t.TempDir(), "store"), Create())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// locksDir returns a fresh owner-only locks directory.
func locksDir(t testing.TB) string {
	t.Helper()
	testPlatform(t)
	d := filepath.Join(t.TempDir(), "locks")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	testOwnerOnlyDir(t, d)
	return d
}

// within fails the test if f does not return in d: every test that could
// hang on a FIFO or a lock runs its risky step through it.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("did not return within %v", d)
	}
}

func acquire(t *testing.T, dir, name string, opts ...LeaseOption) *Lease {
	t.Helper()
	l, err := AcquireLease(context.Background(), dir, name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Release() })
	return l
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// entries lists every name under dir, recursively, relative to dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// wineDeletePending is why a test of a lock file deleted under its holder
// needs real Windows (skipUnderWine).
const wineDeletePending = "a file deleted while its holder has it open stays openable at its name under Wine 8, " +
	"which also reports DeletePending false; Windows frees the name (POSIX delete) or refuses the open " +
	"(STATUS_DELETE_PENDING), either of which the holder reads as its lease lost"

// stealLease rewrites a lease record in place with another attempt id.
func stealLease(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	r, err := ParseLeaseRecord(b)
	if err != nil {
		t.Error(err)
		return
	}
	r.AttemptID = exactfs.NewUUID()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Error(err)
		return
	}
	f.Write(r.Marshal())
	f.Close()
}
