package sys

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/windows"
)

// lockChildEnv makes this test binary a child process (see TestMain) that
// holds a file: "lock:<file>" takes an exclusive lock on holderRange,
// "write:<file>" only keeps a handle open for writing. Then it creates
// "<file>.locked" and waits to be killed.
const lockChildEnv = "EXACTFS_SYS_LOCK_CHILD"

// holderRange is beyond any record's bytes, as issue 22 step 4 means to
// lock: a lock there leaves the record readable by everyone.
const holderStart, holderLen = 1 << 39, 1 << 39

func lockChild(arg string) int {
	mode, path, _ := strings.Cut(arg, ":")
	fd, err := open(AtCWD, path, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: open:", err)
		return 2
	}
	if mode == "lock" {
		if err := OFDLock(fd, holderStart, holderLen); err != nil {
			fmt.Fprintln(os.Stderr, "child: lock:", err)
			return 2
		}
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
	child := startHolder(t, "lock", path)
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

	child.kill(t)
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

type holder struct {
	cmd    *exec.Cmd
	exited bool
}

// kill ends the holder with TerminateProcess and waits until its exit is
// seen.
func (c *holder) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil { // TerminateProcess
		t.Fatal(err)
	}
	c.cmd.Wait()
	c.exited = true
}

// startHolder starts this test binary as a child that holds path (see
// lockChildEnv) and returns once it does. It is killed at the end of the
// test if it still runs.
func startHolder(t *testing.T, mode, path string) *holder {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+mode+":"+path)
	// Output to a file, never a pipe: Wine's helper processes can inherit
	// a pipe and hold it open, and Wait would wait for them.
	errf, err := os.Create(path + ".stderr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { errf.Close() })
	cmd.Stderr = errf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &holder{cmd: cmd}
	t.Cleanup(func() {
		if !c.exited {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	// A bound on the wait for the child to start, not a timing claim.
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(path + ".locked"); err == nil {
			return c
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(errf.Name())
			t.Fatalf("the child did not hold %s within 2 minutes; its stderr: %s", path, b)
		}
	}
}

// TestWriterInAnotherProcess: a handle open for writing in another process
// makes ProbeNoWriter answer ErrWouldBlock and a deny-write open fail with
// EBUSY; once that process is killed with TerminateProcess its handle is
// gone, and both succeed at the first attempt.
func TestWriterInAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec")
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	child := startHolder(t, "write", path)
	r, err := Open(AtCWD, path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(r)
	wantErr(t, "ProbeNoWriter while another process writes", ProbeNoWriter(r), ErrWouldBlock)
	_, err = OpenHandle(AtCWD, path, HowRead|HowDenyWrite)
	wantErr(t, "deny-write open while another process writes", err, syscall.EBUSY)
	child.kill(t)
	if err := ProbeNoWriter(r); err != nil {
		t.Fatalf("ProbeNoWriter right after the writer was killed: %v", err)
	}
	dw, err := OpenHandle(AtCWD, path, HowRead|HowDenyWrite)
	if err != nil {
		t.Fatalf("deny-write open right after the writer was killed: %v", err)
	}
	Close(dw)
}

// TestTryFlockOnFile: TryFlock on a regular file is flock's stand-in:
// another handle (which Windows treats like another process's) is refused
// with ErrWouldBlock until the holder's handle closes; the record's bytes
// stay readable and writable through the other handle, and the lock meets
// neither the attestation range nor a lock on the record's bytes. A
// directory is refused (TestNoWindowsMeaningRefuses). Before, every call
// was ErrUnsupported, so the root's judge-then-remove bracket (its reclaim
// guard) refused every removal on Windows.
func TestTryFlockOnFile(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "f", "record")
	a, err := Open(fd, "f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(fd, "f", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(b)
	if err := TryFlock(a); err != nil {
		t.Fatalf("TryFlock: %v", err)
	}
	if err := TryFlock(b); err != ErrWouldBlock {
		t.Fatalf("TryFlock through another handle: %v, want ErrWouldBlock", err)
	}
	buf := make([]byte, 6)
	if n, err := Pread(b, buf, 0); err != nil || string(buf[:n]) != "record" {
		t.Fatalf("reading the file through another handle while it is flocked: %q %v", buf[:n], err)
	}
	if err := OFDLock(b, 1<<39, 1<<39); err != nil {
		t.Fatalf("the attestation range while the file is flocked: %v", err)
	}
	if err := OFDLock(b, 0, 6); err != nil {
		t.Fatalf("a lock on the record's bytes while the file is flocked: %v", err)
	}
	Close(a)
	if err := TryFlock(b); err != nil {
		t.Fatalf("TryFlock after the holder's handle closed: %v", err)
	}
}
