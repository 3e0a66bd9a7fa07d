package exactfs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestWindowsDirTryLock is TestDirTryLock (Unix) on Windows: two Dirs on
// one directory exclude each other in one process, locking again through
// the holder succeeds, Close releases, a closed Dir refuses. The lock is
// taken on DirLockName inside the directory, which stays (never removed).
// Before, every call failed with unsupported (flock).
func TestWindowsDirTryLock(t *testing.T) {
	dir := t.TempDir()
	a, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := a.TryLock(); !ok || err != nil {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if ok, err := a.TryLock(); !ok || err != nil {
		t.Fatalf("locking again through the holder: %v %v", ok, err)
	}
	if ok, err := b.TryLock(); ok || err != nil {
		t.Fatalf("second open locked a held directory: %v %v", ok, err)
	}
	a.Close()
	if ok, err := b.TryLock(); !ok || err != nil {
		t.Fatalf("lock after the holder closed: %v %v", ok, err)
	}
	if _, err := a.TryLock(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("TryLock on a closed Dir: %v, want os.ErrClosed", err)
	}
	b.Close()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != DirLockName || !names[0].Type().IsRegular() {
		t.Fatalf("the directory holds %v, want only the lock file %s", names, DirLockName)
	}
}

// TestWindowsDirTryLockRefusesNonFile: something other than a regular
// file at DirLockName (a directory here) is refused with its type, never
// opened or replaced.
func TestWindowsDirTryLockRefusesNonFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, DirLockName), 0o700); err != nil {
		t.Fatal(err)
	}
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ok, err := d.TryLock()
	if ok || CodeOf(err) != CodeNotRegularFile {
		t.Fatalf("TryLock with a directory at %s: %v %v, want not_regular_file", DirLockName, ok, err)
	}
	t.Logf("refused: %v", err)
}

// TestWindowsDirLockAcrossProcesses: a child process holds the lock; this
// process cannot take it; TerminateProcess kills the child and the kernel
// releases its lock, so the next TryLock succeeds without anyone removing
// or rewriting anything.
func TestWindowsDirLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), windowsChildEnv+"=dirlock-hold", "EXACTFS_DIR="+dir, "EXACTFS_READY="+ready)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	waitForFile(t, ready, exited)

	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if ok, err := d.TryLock(); ok || err != nil {
		t.Fatalf("TryLock while another process holds the lock: %v %v, want false", ok, err)
	}
	before, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Process.Kill(); err != nil { // TerminateProcess
		t.Fatal(err)
	}
	<-exited
	exited <- nil // for the cleanup
	// The kernel releases the dead handle's locks as it closes it: soon,
	// but not necessarily by the time the wait returns.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := d.TryLock()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lock of a terminated process was not released within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	after, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(before, after, func(a, b os.DirEntry) bool { return a.Name() == b.Name() }) {
		t.Fatalf("taking the released lock changed the directory: %v, then %v", before, after)
	}
}

// childHoldDirLock takes the lock on EXACTFS_DIR, creates EXACTFS_READY
// and waits to be killed.
func childHoldDirLock() error {
	d, err := OpenDir(os.Getenv("EXACTFS_DIR"))
	if err != nil {
		return err
	}
	if ok, err := d.TryLock(); !ok || err != nil {
		return errors.Join(errors.New("the child could not take the lock"), err)
	}
	if err := os.WriteFile(os.Getenv("EXACTFS_READY"), nil, 0o600); err != nil {
		return err
	}
	time.Sleep(time.Hour)
	return nil
}

// waitForFile waits for a child process to create path, failing if it
// exits first or takes more than a minute (Wine starts slowly).
func waitForFile(t *testing.T, path string, exited chan error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the child exited before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the child was not ready after a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
