package sys

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// lockChildEnv names the file a child process (this test binary, see
// TestMain) locks: it takes an exclusive lock on holderRange, creates
// "<file>.locked" and waits to be killed.
const lockChildEnv = "EXACTFS_SYS_LOCK_CHILD"

// holderRange is beyond any record's bytes, as issue 22 step 4 means to
// lock: a lock there leaves the record readable by everyone.
const holderStart, holderLen = 1 << 39, 1 << 39

func lockChild(path string) int {
	fd, err := open(AtCWD, path, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 2
	}
	if err := OFDLock(fd, holderStart, holderLen); err != nil {
		fmt.Fprintln(os.Stderr, "child: lock:", err)
		return 2
	}
	if err := os.WriteFile(path+".locked", nil, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "child: marker:", err)
		return 2
	}
	time.Sleep(10 * time.Minute) // killed long before
	return 3
}

// TestLockAcrossProcesses: an exclusive LockFileEx range held by another
// process refuses this one (ErrWouldBlock; the raw ERROR_LOCK_VIOLATION
// from OFDTryLock and OFDReadLock) without blocking reads of the bytes
// outside it, and a holder killed with TerminateProcess leaves the range
// free by the time its exit is seen: the first attempt after Wait takes it.
func TestLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec")
	if err := os.WriteFile(path, []byte(`{"pid":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+path)
	// Output to a file, never a pipe: Wine's helper processes can inherit
	// a pipe and hold it open, and Wait would wait for them.
	errf, err := os.Create(filepath.Join(dir, "child.stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	cmd.Stderr = errf
	stderr := func() string { b, _ := os.ReadFile(errf.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	defer func() {
		if !exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	// A bound on the wait for the child to start, not a timing claim.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path + ".locked"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child did not lock within 2 minutes; its stderr: %s", stderr())
		}
	}

	fd, err := Open(AtCWD, path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(fd)
	if err := OFDLock(fd, holderStart, holderLen); err != ErrWouldBlock {
		t.Fatalf("OFDLock while the child holds the range: %v, want ErrWouldBlock", err)
	}
	if err := OFDLock(fd, holderStart+holderLen/2, 1); err != ErrWouldBlock {
		t.Fatalf("OFDLock of one byte inside the child's range: %v, want ErrWouldBlock", err)
	}
	if err := OFDTryLock(fd, holderStart, 1); err != windows.ERROR_LOCK_VIOLATION {
		t.Fatalf("OFDTryLock: %v, want ERROR_LOCK_VIOLATION", err)
	}
	if err := OFDReadLock(fd, holderStart, 1); err != windows.ERROR_LOCK_VIOLATION {
		t.Fatalf("OFDReadLock: %v, want ERROR_LOCK_VIOLATION", err)
	}
	buf := make([]byte, 32)
	if n, err := Pread(fd, buf, 0); err != nil || string(buf[:n]) != `{"pid":1}` {
		t.Fatalf("reading the record while the range beyond it is locked: %q, %v", buf[:n], err)
	}
	if err := OFDLock(fd, 0, 16); err != nil {
		t.Fatalf("OFDLock of bytes outside the child's range: %v", err)
	}
	if err := OFDUnlock(fd, 0, 16); err != nil {
		t.Fatal(err)
	}

	if err := cmd.Process.Kill(); err != nil { // TerminateProcess
		t.Fatal(err)
	}
	cmd.Wait()
	exited = true
	if err := OFDLock(fd, holderStart, holderLen); err != nil {
		t.Fatalf("OFDLock right after the holder was killed: %v, want the range free", err)
	}
	if err := OFDUnlock(fd, holderStart, holderLen); err != nil {
		t.Fatal(err)
	}
}

// TestLockWithinProcess: locks belong to handles: another handle of this
// process conflicts; shared locks coexist and exclude an exclusive one;
// unlocking or closing the holding handle frees the range; length 0 means
// to the end and beyond, the same range for lock and unlock.
func TestLockWithinProcess(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "f", "x")
	a, _ := Open(fd, "f", os.O_RDWR, 0)
	b, _ := Open(fd, "f", os.O_RDWR, 0)
	if err := OFDLock(a, 100, 0); err != nil {
		t.Fatal(err)
	}
	if err := OFDLock(b, 1<<62, 1); err != ErrWouldBlock {
		t.Fatalf("another handle, far inside a length-0 lock: %v, want ErrWouldBlock", err)
	}
	if err := OFDLock(b, 0, 100); err != nil {
		t.Fatalf("the bytes before a length-0 lock: %v", err)
	}
	if err := OFDUnlock(a, 100, 0); err != nil {
		t.Fatalf("OFDUnlock(100, 0): %v", err)
	}
	if err := OFDLock(b, 100, 0); err != nil {
		t.Fatalf("after the unlock: %v", err)
	}
	Close(b) // closing the holder frees its locks
	b, _ = Open(fd, "f", os.O_RDWR, 0)
	if err := OFDReadLock(a, 200, 10); err != nil {
		t.Fatal(err)
	}
	if err := OFDReadLock(b, 200, 10); err != nil {
		t.Fatalf("two shared locks: %v", err)
	}
	if err := OFDLock(b, 205, 1); !errors.Is(err, ErrWouldBlock) {
		t.Fatalf("exclusive over another handle's shared lock: %v", err)
	}
	Close(a)
	Close(b)
	d, err := OpenDir(fd, ".")
	if err != nil {
		t.Fatal(err)
	}
	defer Close(d)
	if err := OFDLock(d, 0, 1); err == nil || err == ErrWouldBlock {
		t.Fatalf("OFDLock on a directory handle: %v, want an error", err)
	}
}
