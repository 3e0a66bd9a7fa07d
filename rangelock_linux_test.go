//go:build linux && !exactfs_portable

package exactfs

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

func openRW(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func mustLock(t *testing.T, f *os.File, mode LockMode, start, length int64, want bool) {
	t.Helper()
	ok, err := TryLockRange(f, mode, start, length)
	if err != nil {
		t.Fatalf("TryLockRange(%d, %d, %d): %v", mode, start, length, err)
	}
	if ok != want {
		t.Fatalf("TryLockRange(mode %d, [%d, +%d)) = %v, want %v", mode, start, length, ok, want)
	}
}

func mustHeld(t *testing.T, f *os.File, start, length int64, want bool) {
	t.Helper()
	held, known := RangeHeld(f, start, length)
	if !known || held != want {
		t.Fatalf("RangeHeld([%d, +%d)) = %v (known %v), want %v", start, length, held, known, want)
	}
}

// TestRangeLockDescriptors: two open file descriptions of one file in one
// process conflict as two processes would (the lock is the description's,
// not the process's: a process lock would let the second open share it
// silently), only on overlapping bytes; a description never conflicts
// with itself; RangeHeld reports only other descriptions' locks; and
// UnlockRange frees exactly what it names.
func TestRangeLockDescriptors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	putFile(t, path, []byte(`{"pid":1}`))
	a, b := openRW(t, path), openRW(t, path)

	mustLock(t, a, LockExclusive, 0, 1<<40, true)
	mustLock(t, a, LockExclusive, 0, 1<<40, true) // again, through the same description
	mustLock(t, b, LockExclusive, 5, 1, false)
	mustLock(t, b, LockShared, 1<<40-1, 1, false)
	mustLock(t, b, LockExclusive, 1<<40, 1, true) // the first byte beyond a's range
	mustHeld(t, b, 0, 1<<40, true)
	mustHeld(t, b, 1<<39, 1, true)
	mustHeld(t, a, 0, 1<<40, false) // a's own lock is not another's
	mustHeld(t, a, 1<<40, 1, true)  // b's byte

	if err := UnlockRange(a, 0, 1<<40); err != nil {
		t.Fatal(err)
	}
	mustHeld(t, b, 0, 1<<40, false)
	mustLock(t, b, LockExclusive, 0, 1<<40, true)

	// Closing the description drops its locks without an unlock.
	b.Close()
	mustHeld(t, a, 0, 0, false)
}

// TestRangeLockShared: shared locks of several descriptions coexist, an
// exclusive one conflicts with each of them, and RangeHolderOf describes
// the lock it finds as the kernel does: shared or not, its own range, and
// pid -1 (an open-file-description lock belongs to no process).
func TestRangeLockShared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	putFile(t, path, nil)
	a, b, c := openRW(t, path), openRW(t, path), openRW(t, path)
	const slot = 1<<39 + 7

	mustLock(t, a, LockShared, slot, 1, true)
	mustLock(t, b, LockShared, slot, 1, true)
	mustLock(t, c, LockExclusive, 0, 1<<40, false)
	mustLock(t, c, LockExclusive, slot+1, 1, true)

	h, err := RangeHolderOf(c, 1<<39, 1<<39)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Held || !h.Shared || h.Start != slot || h.Len != 1 || h.Pid != -1 {
		t.Fatalf("RangeHolderOf = %+v, want a shared lock on [%d, +1) with pid -1", h, slot)
	}
	if h, err := RangeHolderOf(a, 0, 1<<39); err != nil || h.Held {
		t.Fatalf("RangeHolderOf of a free range = %+v, %v; want not held", h, err)
	}

	UnlockRange(a, slot, 1)
	UnlockRange(b, slot, 1)
	mustLock(t, c, LockExclusive, 0, 1<<40, true)
	h, err = RangeHolderOf(a, slot, 1)
	if err != nil || !h.Held || h.Shared || h.Start != 0 || h.Len != 1<<40 || h.Pid != -1 {
		t.Fatalf("RangeHolderOf = %+v, %v; want c's exclusive [0, 2^40) with pid -1", h, err)
	}
}

// rangeLockChild takes the lock its arguments name (path, "shared" or
// "exclusive", start, length), says "locked" on stdout and waits to be
// killed.
func rangeLockChild(args []string) error {
	f, err := os.OpenFile(args[0], os.O_RDWR, 0)
	if err != nil {
		return err
	}
	mode := LockExclusive
	if args[1] == "shared" {
		mode = LockShared
	}
	start, _ := strconv.ParseInt(args[2], 10, 64)
	length, _ := strconv.ParseInt(args[3], 10, 64)
	ok, err := TryLockRange(f, mode, start, length)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("the range was locked")
	}
	os.Stdout.WriteString("locked\n")
	select {}
}

func init() { children["range-lock"] = rangeLockChild }

// TestRangeLockKilledHolder: a lock held by another process is seen
// (RangeHeld, RangeHolderOf, and a refused TryLockRange) for as long as
// the process lives, and is gone the moment its SIGKILL is reaped: the
// kernel drops it, whatever the holder did not get to do. This is the
// property a contender's proof of a dead holder rests on.
func TestRangeLockKilledHolder(t *testing.T) {
	for _, mode := range []string{"exclusive", "shared"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rec")
			putFile(t, path, []byte("x"))
			args, _ := json.Marshal([]string{path, mode, strconv.Itoa(1 << 39), "1"})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=range-lock", childArgsEnv+"="+string(args))
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			killed := false
			t.Cleanup(func() {
				if !killed {
					cmd.Process.Kill()
					cmd.Wait()
				}
			})
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "locked\n" {
				t.Fatalf("child: %q, %v", line, err)
			}

			f := openRW(t, path)
			mustHeld(t, f, 0, 1<<40, true)
			h, err := RangeHolderOf(f, 0, 0)
			if err != nil || !h.Held || h.Shared != (mode == "shared") || h.Pid != -1 {
				t.Fatalf("RangeHolderOf = %+v, %v; want the child's %s lock, pid -1", h, err, mode)
			}
			mustLock(t, f, LockExclusive, 1<<39, 1, false)

			cmd.Process.Signal(syscall.SIGKILL)
			err = cmd.Wait()
			killed = true
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child: %v, want death by SIGKILL", err)
			}
			mustHeld(t, f, 0, 0, false)
			mustLock(t, f, LockExclusive, 1<<39, 1, true)
		})
	}
}

// TestLockFD: Dir.OpenLockFD opens a regular file and only a regular file
// (a FIFO, a directory, a symlink to a regular file and a missing name are
// refused, none opened: a FIFO with no writer would otherwise be the
// probe's descriptor), and its descriptor asks about locks, reads and
// stats the inode it was opened on.
func TestLockFD(t *testing.T) {
	dirPath := t.TempDir()
	path := filepath.Join(dirPath, "rec")
	putFile(t, path, []byte(`{"pid":42}`))
	if err := syscall.Mkfifo(filepath.Join(dirPath, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dirPath, "sub"), 0o700)
	os.Symlink("rec", filepath.Join(dirPath, "link"))
	d, err := OpenDir(dirPath)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	for _, name := range []string{"fifo", "sub", "link", "missing"} {
		if fd, _, err := d.OpenLockFD(name); fd != -1 || err == nil {
			fd.Close()
			t.Errorf("OpenLockFD(%s) = %d, %v; want -1 and an error", name, fd, err)
		}
	}

	fd, ino, err := d.OpenLockFD("rec")
	if err != nil || fd < 0 {
		t.Fatalf("OpenLockFD(rec) = %d, %v", fd, err)
	}
	defer fd.Close()
	if want := inode(t, path); ino != want {
		t.Fatalf("ino %d, want %d", ino, want)
	}
	st, err := fd.Stat()
	if err != nil || st.Ino != ino || st.Size != 10 {
		t.Fatalf("Stat = %+v, %v", st, err)
	}
	buf := make([]byte, 64)
	if n, err := fd.Pread(buf, 1); err != nil || string(buf[:n]) != `"pid":42}` {
		t.Fatalf("Pread = %q, %v", buf[:n], err)
	}
	if held, known := fd.Held(0, 0); held || !known {
		t.Fatalf("Held on a free file = %v, %v", held, known)
	}
	holder := openRW(t, path)
	mustLock(t, holder, LockShared, 1<<39+3, 1, true)
	if held, known := fd.Held(1<<39, 1<<39); !held || !known {
		t.Fatalf("Held = %v, %v; want held", held, known)
	}
	if held, _ := fd.Held(0, 1<<39); held {
		t.Fatal("Held reports a lock outside the range asked about")
	}
	if h, err := fd.Holder(0, 0); err != nil || !h.Held || !h.Shared || h.Start != 1<<39+3 {
		t.Fatalf("Holder = %+v, %v", h, err)
	}

	// The raw forms of the lock calls: a borrowed descriptor of an
	// *os.File, and the probe's own.
	other := openRW(t, path)
	raw := LockFD(other.Fd())
	if ok, err := raw.TryLock(LockExclusive, 0, 1<<39); !ok || err != nil {
		t.Fatalf("LockFD.TryLock = %v, %v", ok, err)
	}
	mustLock(t, holder, LockExclusive, 0, 1, false)
	if ok, err := fd.TryLock(LockShared, 1<<39+3, 1); !ok || err != nil {
		t.Fatalf("LockFD.TryLock(shared, beside holder's) = %v, %v", ok, err)
	}
	if ok, err := raw.TryLock(LockExclusive, 1<<39+3, 1); ok || err != nil {
		t.Fatalf("LockFD.TryLock over two shared locks = %v, %v; want false, nil", ok, err)
	}
	if err := raw.Unlock(0, 1<<39); err != nil {
		t.Fatal(err)
	}
	mustLock(t, holder, LockExclusive, 0, 1, true)

	// A Dir that is closed opens nothing.
	d.Close()
	if fd, _, err := d.OpenLockFD("rec"); fd != -1 || !errors.Is(err, os.ErrClosed) {
		t.Fatalf("OpenLockFD after Close = %d, %v; want -1, closed", fd, err)
	}
}
