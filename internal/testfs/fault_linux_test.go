package testfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFaultHelpers proves each fault the helpers make is the fault they
// name, and that it clears the way they say: without this, a fault test of
// exactfs could pass against a filesystem that never failed.
func TestFaultHelpers(t *testing.T) {
	t.Run("FillData", func(t *testing.T) {
		mnt := LoopExt4(t, 16)
		fill := FillData(t, mnt)
		err := os.WriteFile(filepath.Join(mnt, "new"), []byte("x"), 0o600)
		if !errors.Is(err, unix.ENOSPC) {
			t.Fatalf("a new file's first byte on a full filesystem: %v, want ENOSPC", err)
		}
		os.Remove(filepath.Join(mnt, "new"))
		if err := os.Remove(fill); err != nil {
			t.Fatal(err)
		}
		writeRead(t, mnt)
	})
	t.Run("FillInodes", func(t *testing.T) {
		mnt := LoopExt4With(t, 16, []string{"-N", "64"}, "")
		fill := FillInodes(t, mnt)
		_, err := os.Create(filepath.Join(mnt, "new"))
		if !errors.Is(err, unix.ENOSPC) {
			t.Fatalf("create with no inode free: %v, want ENOSPC", err)
		}
		if err := os.RemoveAll(fill); err != nil {
			t.Fatal(err)
		}
		writeRead(t, mnt)
	})
	t.Run("RemountReadOnly", func(t *testing.T) {
		mnt := LoopExt4(t, 16)
		writeRead(t, mnt)
		RemountReadOnly(t, mnt)
		if err := os.WriteFile(filepath.Join(mnt, "g"), nil, 0o600); !errors.Is(err, unix.EROFS) {
			t.Fatalf("create on a read-only remount: %v, want EROFS", err)
		}
		if b, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(b) != "hello" {
			t.Fatalf("read on a read-only remount: %q, %v", b, err)
		}
		RemountReadWrite(t, mnt)
		writeRead(t, mnt)
	})
	t.Run("RemountReadOnlyRefusedWhileWriting", func(t *testing.T) {
		// What the EROFS tests build on: a plain remount cannot happen
		// while a file is open for writing (a lock holder's record).
		mnt := LoopExt4(t, 16)
		f, err := os.OpenFile(filepath.Join(mnt, "open"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := unix.Mount("none", mnt, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); !errors.Is(err, unix.EBUSY) {
			t.Fatalf("remount,ro with a file open for writing: %v, want EBUSY", err)
		}
	})
	t.Run("ForceReadOnly", func(t *testing.T) {
		mnt := LoopExt4With(t, 16, nil, "errors=remount-ro")
		writeRead(t, mnt)
		f, err := os.OpenFile(filepath.Join(mnt, "open"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		ForceReadOnly(t, mnt)
		if _, err := f.Write([]byte("x")); !errors.Is(err, unix.EROFS) {
			t.Errorf("write through a descriptor opened before: %v, want EROFS", err)
		}
		f.Close()
		if err := os.WriteFile(filepath.Join(mnt, "g"), nil, 0o600); !errors.Is(err, unix.EROFS) {
			t.Fatalf("create after the forced read-only: %v, want EROFS", err)
		}
		if b, err := os.ReadFile(filepath.Join(mnt, "f")); err != nil || string(b) != "hello" {
			t.Fatalf("read after the forced read-only: %q, %v", b, err)
		}
		// A remount,rw does not clear it; an unmount and mount does.
		_ = unix.Mount("none", mnt, "", unix.MS_REMOUNT, "")
		if err := os.WriteFile(filepath.Join(mnt, "g"), nil, 0o600); !errors.Is(err, unix.EROFS) {
			t.Fatalf("create after remount,rw: %v, want EROFS still", err)
		}
		Remount(t, mnt)
		writeRead(t, mnt)
	})
}
