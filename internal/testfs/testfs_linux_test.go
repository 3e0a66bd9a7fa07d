package testfs

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

const (
	tmpfsMagic = 0x01021994
	xfsMagic   = 0x58465342
	ext4Magic  = 0xef53
	fuseMagic  = 0x65735546
)

func fsType(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Type)
}

// isMountPoint reports whether dir is the root of a mount, by comparing its
// device with its parent's.
func isMountPoint(t *testing.T, dir string) bool {
	t.Helper()
	var a, b unix.Stat_t
	if err := unix.Stat(dir, &a); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false
		}
		t.Fatal(err)
	}
	if err := unix.Stat(filepath.Dir(dir), &b); err != nil {
		t.Fatal(err)
	}
	return a.Dev != b.Dev
}

// subtestMount makes a mount in a subtest and returns its mount point after
// the subtest, and so its cleanups, have finished.
func subtestMount(t *testing.T, name string, mk func(t *testing.T) string, check func(t *testing.T, dir string)) string {
	t.Helper()
	var dir string
	if !t.Run(name, func(t *testing.T) {
		dir = mk(t)
		if !isMountPoint(t, dir) {
			t.Fatalf("%s is not a mount point", dir)
		}
		check(t, dir)
	}) {
		t.FailNow()
	}
	if dir != "" && isMountPoint(t, dir) {
		t.Errorf("%s is still mounted after the test ended", dir)
	}
	return dir
}

func writeRead(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(p); err != nil || string(b) != "hello" {
		t.Fatalf("read back %q, %v", b, err)
	}
}

func TestTmpfs(t *testing.T) {
	subtestMount(t, "mount", func(t *testing.T) string { return Tmpfs(t) }, func(t *testing.T, dir string) {
		if got := fsType(t, dir); got != tmpfsMagic {
			t.Fatalf("statfs type %#x, want tmpfs", got)
		}
		writeRead(t, dir)
	})
}

func loopDevicesOf(t *testing.T, image string) string {
	t.Helper()
	out, err := exec.Command("losetup", "-j", image).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup -j %s: %v: %s", image, err, out)
	}
	return string(bytes.TrimSpace(out))
}

func TestLoop(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mk    func(testing.TB, int) string
		magic int64
	}{
		{"xfs", LoopXFS, xfsMagic},
		{"ext4", LoopExt4, ext4Magic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var image string
			subtestMount(t, "mount", func(t *testing.T) string { return tc.mk(t, 64) }, func(t *testing.T, dir string) {
				if got := fsType(t, dir); got != tc.magic {
					t.Fatalf("statfs type %#x, want %#x", got, tc.magic)
				}
				writeRead(t, dir)
				loopsMu.Lock()
				image = loops[dir].image
				loopsMu.Unlock()
				if loopDevicesOf(t, image) == "" {
					t.Fatalf("no loop device backs %s", image)
				}
			})
			if image == "" {
				return
			}
			// The image is gone with the temp dir, so look the device up
			// by the name the kernel remembers.
			if out, _ := exec.Command("losetup", "-a").CombinedOutput(); bytes.Contains(out, []byte(image)) {
				t.Errorf("loop device still attached after cleanup: %s", out)
			}
		})
	}
}

// TestShutdownCutsPower proves the harness really loses what a power cut
// loses, and only that: after a sync baseline, a file written and fsynced
// (with its directory) survives Shutdown+Remount with its bytes; a file
// written without fsync, then renamed and its directory fsynced, survives
// empty; and a file created and written afterwards without any fsync is
// gone. Without the
// second half, a power-cut test of exactfs could pass against a harness
// that quietly flushed everything.
func TestShutdownCutsPower(t *testing.T) {
	for _, tc := range []struct {
		name string
		mk   func(testing.TB, int) string
	}{
		{"xfs", LoopXFS},
		{"ext4", LoopExt4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := tc.mk(t, 64)
			unix.Sync()

			synced := filepath.Join(mnt, "synced")
			f, err := os.OpenFile(synced, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte("durable")); err != nil {
				t.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				t.Fatal(err)
			}
			f.Close()
			// The classic bug: data not fsynced before the rename that
			// publishes it, and the rename made durable by a directory
			// fsync. The name survives the cut, the bytes do not.
			staged := filepath.Join(mnt, "staged")
			renamed := filepath.Join(mnt, "renamed")
			if err := os.WriteFile(staged, []byte("no fsync before rename"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(staged, renamed); err != nil {
				t.Fatal(err)
			}
			d, err := os.Open(mnt)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Sync(); err != nil {
				t.Fatal(err)
			}
			d.Close()

			unsynced := filepath.Join(mnt, "unsynced")
			if err := os.WriteFile(unsynced, []byte("volatile"), 0o600); err != nil {
				t.Fatal(err)
			}

			Shutdown(t, mnt)
			// The filesystem is down: even a create fails now.
			err = os.WriteFile(filepath.Join(mnt, "after"), nil, 0o600)
			if !errors.Is(err, unix.EIO) {
				t.Fatalf("create after shutdown: %v, want EIO", err)
			}
			Remount(t, mnt)

			if b, err := os.ReadFile(synced); err != nil || string(b) != "durable" {
				t.Errorf("fsynced file after remount: %q, %v; want %q", b, err, "durable")
			}
			if _, err := os.Lstat(unsynced); !errors.Is(err, os.ErrNotExist) {
				b, _ := os.ReadFile(unsynced)
				t.Errorf("unsynced file survived the power cut (lstat err %v, bytes %q): the harness does not cut power", err, b)
			}
			if b, err := os.ReadFile(renamed); err != nil || len(b) != 0 {
				t.Errorf("file renamed without a data fsync after remount: %q, %v; want present and empty (so a missing fsync is caught)", b, err)
			}
			writeRead(t, mnt) // mounted read-write again
		})
	}
}

func TestBindfsNoRenameFlags(t *testing.T) {
	subtestMount(t, "mount", func(t *testing.T) string {
		mnt, src := BindfsNoRenameFlagsWithSource(t)
		if err := os.WriteFile(filepath.Join(src, "from-source"), []byte("s"), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(filepath.Join(mnt, "from-source")); err != nil || string(b) != "s" {
			t.Fatalf("mount does not show its source: %q, %v", b, err)
		}
		return mnt
	}, func(t *testing.T, dir string) {
		if got := fsType(t, dir); got != fuseMagic {
			t.Fatalf("statfs type %#x, want FUSE", got)
		}
		a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "c")
		for _, p := range []string{a, b} {
			if err := os.WriteFile(p, []byte(filepath.Base(p)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, c, unix.RENAME_NOREPLACE); !errors.Is(err, unix.EINVAL) {
			t.Errorf("renameat2(RENAME_NOREPLACE): %v, want EINVAL", err)
		}
		if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); !errors.Is(err, unix.EINVAL) {
			t.Errorf("renameat2(RENAME_EXCHANGE): %v, want EINVAL", err)
		}
		if got, _ := os.ReadFile(b); string(got) != "b" {
			t.Errorf("b changed to %q by a refused exchange", got)
		}
		// Flags refused, but plain rename and link work.
		if err := os.Rename(a, c); err != nil {
			t.Fatalf("rename: %v", err)
		}
		if err := os.Link(c, a); err != nil {
			t.Fatalf("link: %v", err)
		}
		// With attr_timeout=0 stat is fresh right after the link.
		var st unix.Stat_t
		if err := unix.Stat(c, &st); err != nil || st.Nlink != 2 {
			t.Errorf("nlink of c right after link: %d, %v; want 2", st.Nlink, err)
		}
	})
}

func TestUnshare(t *testing.T) {
	RequireUnshare(t)
	if !UnshareAvailable() {
		t.Fatal("RequireUnshare passed but UnshareAvailable is false")
	}
	out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "sh", "-c", "echo $$").CombinedOutput()
	if err != nil || string(bytes.TrimSpace(out)) != "1" {
		t.Fatalf("shell in a new pid namespace has pid %q (%v), want 1", out, err)
	}
}

// TestRemountCycles repeats shutdown and remount, with other loop mounts
// coming and going, and checks that every remount gives a working
// filesystem (see waitLoopDetached).
func TestRemountCycles(t *testing.T) {
	for _, tc := range []struct {
		name string
		mk   func(testing.TB, int) string
	}{
		{"xfs", LoopXFS},
		{"ext4", LoopExt4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mnt := tc.mk(t, 64)
			for i := 0; i < 6; i++ {
				p := filepath.Join(mnt, "f")
				if err := os.WriteFile(p, []byte{byte(i)}, 0o600); err != nil {
					t.Fatalf("cycle %d: %v", i, err)
				}
				unix.Sync()
				Shutdown(t, mnt)
				if i%2 == 0 {
					tc.mk(t, 1) // another loop device in use meanwhile
				}
				Remount(t, mnt)
				if b, err := os.ReadFile(p); err != nil || len(b) != 1 || b[0] != byte(i) {
					t.Fatalf("cycle %d: after remount %v, %v", i, b, err)
				}
			}
		})
	}
}
