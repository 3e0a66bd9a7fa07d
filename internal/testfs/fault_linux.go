package testfs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// LoopExt4With is [LoopExt4] with extra mkfs.ext4 arguments (for example
// "-N", "64" for a filesystem with few inodes) and extra mount options (for
// example "errors=remount-ro", which [ForceReadOnly] needs). [Remount]
// mounts it again with the same options.
func LoopExt4With(t testing.TB, sizeMB int, mkfsArgs []string, mountOptions string) string {
	t.Helper()
	RequireCommand(t, "mkfs.ext4")
	mkfs := append([]string{"mkfs.ext4", "-q", "-F"}, mkfsArgs...)
	return newLoop(t, "ext4", max(sizeMB, 16), mkfs, mountOptions)
}

// FillData fills the filesystem that holds dir with the data of one file,
// dir/.testfs-fill, written and fsynced until the filesystem answers ENOSPC
// (as root, so the blocks reserved for root are used up too). It returns
// the file's path: removing it is what clears the fault. The test fails if
// the filesystem never reports ENOSPC.
func FillData(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, ".testfs-fill")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatalf("fill %s: %v", dir, err)
	}
	defer f.Close()
	full := false
	// Large writes first, then single blocks, then single bytes, so that
	// nothing is left for a new file's first block.
	for _, chunk := range []int{1 << 20, 4096, 512} {
		buf := make([]byte, chunk)
		for i := range buf {
			buf[i] = 'x'
		}
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, unix.ENOSPC) {
					t.Fatalf("fill %s: %v", p, err)
				}
				full = true
				break
			}
		}
	}
	if err := f.Sync(); err != nil && !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("fill %s: fsync: %v", p, err)
	}
	if !full {
		t.Fatalf("fill %s: the filesystem never reported ENOSPC", dir)
	}
	return p
}

// FillInodes uses up the inodes of the filesystem that holds dir: it makes
// the directory dir/.testfs-inodes and creates empty files in it until the
// filesystem answers ENOSPC. It returns that directory: removing it (with
// os.RemoveAll) is what clears the fault. Use it on a filesystem made with
// few inodes ([LoopExt4With] and "-N", "64"), or it takes long.
func FillInodes(t testing.TB, dir string) string {
	t.Helper()
	sub := filepath.Join(dir, ".testfs-inodes")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatalf("fill inodes of %s: %v", dir, err)
	}
	for i := 0; ; i++ {
		if i == 1_000_000 {
			t.Fatalf("fill inodes of %s: a million files and no ENOSPC", dir)
		}
		fd, err := unix.Open(filepath.Join(sub, strconv.Itoa(i)), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatalf("fill inodes of %s: %v", dir, err)
		}
		unix.Close(fd)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Ffree != 0 {
		t.Fatalf("fill inodes of %s: ENOSPC with %d inodes free", dir, st.Ffree)
	}
	return sub
}

// RemountReadOnly remounts the filesystem at mountpoint read-only
// (mount -o remount,ro). Linux refuses that (EBUSY) while any file on it is
// open for writing, as a lock holder's record is; the helper retries for up
// to 3 s, for descriptors a process keeps open for a moment after use
// (statelock parks its descriptors for up to a second), and then fails
// the test.
func RemountReadOnly(t testing.TB, mountpoint string) {
	t.Helper()
	RequireRoot(t)
	remountRetry(t, mountpoint, unix.MS_RDONLY, "ro")
}

// RemountReadWrite remounts the filesystem at mountpoint read-write again.
func RemountReadWrite(t testing.TB, mountpoint string) {
	t.Helper()
	RequireRoot(t)
	remountRetry(t, mountpoint, 0, "rw")
}

func remountRetry(t testing.TB, mountpoint string, flags uintptr, what string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := unix.Mount("none", mountpoint, "", unix.MS_REMOUNT|flags, "")
		if err == nil {
			return
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			t.Fatalf("mount -o remount,%s %s: %v", what, mountpoint, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ForceReadOnly makes the ext4 filesystem at mountpoint, which must be
// mounted with errors=remount-ro ([LoopExt4With]), go read-only at once the
// way the kernel does on a metadata error: it reports an error through
// /sys/fs/ext4/DEV/trigger_fs_error. Unlike a remount, this works while
// files are open for writing: from then on every change on the filesystem
// fails with EROFS, through open descriptors too, and reads still work.
// Linux keeps such a filesystem read-only until it is unmounted (a
// remount,rw does not clear it); [Remount] does that, after the test has
// closed everything on it.
func ForceReadOnly(t testing.TB, mountpoint string) {
	t.Helper()
	dev, opts, err := mountSource(mountpoint)
	if err != nil {
		t.Fatalf("force read-only %s: %v", mountpoint, err)
	}
	if !strings.Contains(","+opts+",", ",errors=remount-ro,") {
		t.Fatalf("force read-only %s: mounted with %q, want errors=remount-ro", mountpoint, opts)
	}
	ctl := filepath.Join("/sys/fs/ext4", filepath.Base(dev), "trigger_fs_error")
	if err := os.WriteFile(ctl, []byte("testfs.ForceReadOnly"), 0o200); err != nil {
		Require(t, "ext4 trigger_fs_error", false, err.Error())
	}
	// The filesystem goes read-only in the error path itself; prove it.
	// (access(W_OK) still says yes: the mount is not read-only, ext4
	// refuses each change.)
	probe := filepath.Join(mountpoint, ".testfs-readonly-probe")
	if err := unix.Mkdir(probe, 0o700); !errors.Is(err, unix.EROFS) {
		if err == nil {
			unix.Rmdir(probe)
		}
		t.Fatalf("force read-only %s: after the ext4 error, mkdir returned %v, want EROFS", mountpoint, err)
	}
}

// ForceReadOnlyCommand is the shell command that does what [ForceReadOnly]
// does, for a child process (a CMD of exactfs update) to run while it holds
// the lock.
func ForceReadOnlyCommand(t testing.TB, mountpoint string) string {
	t.Helper()
	dev, _, err := mountSource(mountpoint)
	if err != nil {
		t.Fatalf("force read-only %s: %v", mountpoint, err)
	}
	return "echo testfs.ForceReadOnly > " + filepath.Join("/sys/fs/ext4", filepath.Base(dev), "trigger_fs_error")
}

// mountSource returns the source device and the superblock options of the
// filesystem mounted exactly at mountpoint, from /proc/self/mountinfo.
func mountSource(mountpoint string) (dev, superOptions string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	var found bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		if len(fields) < 10 || unescapeMount(fields[4]) != mountpoint {
			continue
		}
		for i := 6; i < len(fields)-3; i++ {
			if fields[i] == "-" {
				dev, superOptions, found = fields[i+2], fields[i+3], true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", err
	}
	if !found {
		return "", "", fmt.Errorf("nothing is mounted at %s", mountpoint)
	}
	return dev, superOptions, nil
}

// unescapeMount undoes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
