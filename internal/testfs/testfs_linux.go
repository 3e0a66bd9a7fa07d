package testfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fsIOCShutdown is FS_IOC_SHUTDOWN = _IOR('X', 125, __u32), the number that
// XFS_IOC_GOINGDOWN and EXT4_IOC_SHUTDOWN share. golang.org/x/sys has the
// flag values but not the request. The encoding is the generic Linux one
// (amd64, arm64, riscv64, 386, arm); it differs on mips, ppc and sparc,
// where these helpers are not used.
const fsIOCShutdown = 0x8004587d

// fsShutdownNoLogFlush is FS_SHUTDOWN_FLAGS_NOLOGFLUSH (= XFS_FSOP_GOING_FLAGS_NOLOGFLUSH =
// EXT4_GOING_FLAGS_NOLOGFLUSH): stop the filesystem at once, without writing
// the in-memory log. What the journal had not committed is lost, as in a
// power cut.
const fsShutdownNoLogFlush = 0x2

// A loopMount is a filesystem image mounted through a loop device.
type loopMount struct {
	image, dir, fstype, options string
}

var (
	loopsMu sync.Mutex
	loops   = map[string]*loopMount{} // by mount point
)

// Tmpfs mounts a fresh tmpfs (mode 0755, at most 256 MiB) on a new directory
// and returns that directory. It is unmounted when the test ends.
func Tmpfs(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=256m,mode=0755"); err != nil {
		Require(t, "tmpfs mount", false, fmt.Sprintf("mount -t tmpfs %s: %v", dir, err))
	}
	t.Cleanup(func() { unmount(t, dir) })
	return dir
}

// LoopXFS creates a sparse image of sizeMB MiB (xfsprogs needs at least 300;
// smaller sizes are raised to that), makes an xfs filesystem on it, mounts it
// through a loop device and returns the mount point. The image lives in the
// test's temporary directory; the mount is removed when the test ends. See
// [Shutdown] and [Remount] for power-cut tests.
func LoopXFS(t testing.TB, sizeMB int) string {
	t.Helper()
	RequireCommand(t, "mkfs.xfs")
	return newLoop(t, "xfs", max(sizeMB, 300), []string{"mkfs.xfs", "-q", "-f"}, "")
}

// LoopExt4 is [LoopXFS] for ext4 (default journal mode data=ordered, commit
// interval 5 s). sizeMB is raised to at least 16.
func LoopExt4(t testing.TB, sizeMB int) string {
	t.Helper()
	RequireCommand(t, "mkfs.ext4")
	return newLoop(t, "ext4", max(sizeMB, 16), []string{"mkfs.ext4", "-q", "-F"}, "")
}

func newLoop(t testing.TB, fstype string, sizeMB int, mkfs []string, options string) string {
	t.Helper()
	RequireRoot(t)
	RequireCommand(t, "mount", "losetup")
	_, err := os.Stat("/dev/loop-control")
	Require(t, "/dev/loop-control", err == nil, fmt.Sprint(err))

	base := t.TempDir()
	image := filepath.Join(base, fstype+".img")
	dir := filepath.Join(base, "mnt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(image)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Truncate(int64(sizeMB) << 20) // sparse: costs no disk until written
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	run(t, append(mkfs, image)...)
	m := &loopMount{image: image, dir: dir, fstype: fstype, options: options}
	mountLoop(t, m)
	loopsMu.Lock()
	loops[dir] = m
	loopsMu.Unlock()
	t.Cleanup(func() {
		loopsMu.Lock()
		delete(loops, dir)
		loopsMu.Unlock()
		if unmount(t, dir) {
			waitLoopDetached(t, image)
		}
	})
	return dir
}

func mountLoop(t testing.TB, m *loopMount) {
	t.Helper()
	opts := "loop"
	if m.options != "" {
		opts += "," + m.options
	}
	// mount(8) sets up the loop device with autoclear, so the device is
	// detached by the unmount.
	out, err := exec.Command("mount", "-t", m.fstype, "-o", opts, m.image, m.dir).CombinedOutput()
	if err != nil {
		Require(t, "loop mount of "+m.fstype, false, fmt.Sprintf("mount -o %s %s: %v: %s", opts, m.image, err, bytes.TrimSpace(out)))
	}
}

// Shutdown cuts off the xfs or ext4 filesystem mounted at mountpoint (made by
// [LoopXFS] or [LoopExt4]) the way a power cut would: FS_IOC_SHUTDOWN with
// NOLOGFLUSH, so whatever the journal held only in memory is dropped. From
// then on every operation on it fails with EIO. Close what the test has open
// on it, then call [Remount] to see what survived.
//
// Measured on Linux 6.18 (TestShutdownCutsPower), on xfs and on ext4 alike:
// a file created and written after the last sync and never fsynced is gone
// after the remount; a file written, fsynced and whose directory was fsynced
// is there with its bytes; a file written without fsync, renamed to a new
// name and its directory fsynced is there, empty. (With LOGFLUSH instead,
// the never-fsynced file survives, empty.)
func Shutdown(t testing.TB, mountpoint string) {
	t.Helper()
	fd, err := unix.Open(mountpoint, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("shutdown %s: %v", mountpoint, err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetPointerInt(fd, fsIOCShutdown, fsShutdownNoLogFlush); err != nil {
		t.Fatalf("shutdown %s: FS_IOC_SHUTDOWN(NOLOGFLUSH): %v", mountpoint, err)
	}
}

// Remount unmounts the loop filesystem at mountpoint and mounts its image
// again at the same place, which replays the journal as a reboot would. It
// fails the test if anything still holds the filesystem open.
func Remount(t testing.TB, mountpoint string) {
	t.Helper()
	loopsMu.Lock()
	m := loops[mountpoint]
	loopsMu.Unlock()
	if m == nil {
		t.Fatalf("remount %s: not a mount made by testfs.LoopXFS/LoopExt4 in this process", mountpoint)
	}
	if err := unmountRetry(mountpoint); err != nil {
		t.Fatalf("remount %s: unmount: %v (close every file on it first)", mountpoint, err)
	}
	waitLoopDetached(t, m.image)
	mountLoop(t, m)
	// A remount that gives a broken filesystem would otherwise show up as
	// a puzzling EIO in the test's own checks.
	if _, err := os.ReadDir(mountpoint); err != nil {
		t.Fatalf("remount %s: the new mount does not work: %v", mountpoint, err)
	}
}

// waitLoopDetached waits until no loop device is bound to image any more.
//
// Seen once here, before this wait existed: after a shutdown/remount cycle
// on ext4 every read on the new mount failed with EIO; not reproduced in
// over a hundred cycles since. One way to get there: mount(8) reuses a loop
// device still bound to the same file, and the autoclear of the old mount
// then detaches the file from under the new one. In the later cycles the
// device was always gone by the time umount(2) returned, so the wait costs
// nothing.
func waitLoopDetached(t testing.TB, image string) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(10 * time.Second)
	for {
		devs := loopDevicesFor(image)
		if len(devs) == 0 {
			if d := time.Since(start); d > 50*time.Millisecond {
				t.Logf("waited %v for the loop device of %s to detach", d.Round(time.Millisecond), image)
			}
			return
		}
		if time.Now().After(deadline) {
			// The autoclear did not happen (on a loaded machine something,
			// udev's probe for one, can still hold the device): detach it
			// ourselves, and fail only if even that leaves it bound, so no
			// run leaves a loop device behind either way.
			for _, d := range devs {
				out, err := exec.Command("losetup", "-d", "/dev/"+d).CombinedOutput()
				t.Logf("loop device %s still bound to %s 10s after the unmount; losetup -d: %v %s", d, image, err, bytes.TrimSpace(out))
			}
			for end := time.Now().Add(10 * time.Second); len(loopDevicesFor(image)) > 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("loop devices %v still bound to %s after the unmount and losetup -d", loopDevicesFor(image), image)
				}
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// loopDevicesFor lists the loop devices whose backing file is image, from
// /sys/block/loop*/loop/backing_file.
func loopDevicesFor(image string) []string {
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	var devs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // detached meanwhile
		}
		backing := strings.TrimSuffix(strings.TrimSpace(string(b)), " (deleted)")
		if backing == image {
			devs = append(devs, filepath.Base(filepath.Dir(filepath.Dir(f))))
		}
	}
	return devs
}

// BindfsNoRenameFlags mounts, with Debian's bindfs (FUSE), a view of a new
// empty directory and returns the mount point. On that mount renameat2 with
// RENAME_NOREPLACE or RENAME_EXCHANGE fails with EINVAL, while rename(2)
// without flags and link(2) work: the situation of NFS and several FUSE
// filesystems, where exactfs must use its link fallback or refuse
// (atomic_unavailable). The helper checks this on the fresh mount and stops
// the test (see [Require]) if the kernel or bindfs behave otherwise.
//
// The mount uses attr_timeout=0 and entry_timeout=0. With bindfs's defaults
// (1 s caches) stat is stale: right after link(2) the old name still reports
// nlink 1 for up to a second, which would fool any hard-link check.
func BindfsNoRenameFlags(t testing.TB) string {
	t.Helper()
	mnt, _ := BindfsNoRenameFlagsWithSource(t)
	return mnt
}

// BindfsNoRenameFlagsWithSource is [BindfsNoRenameFlags] that also returns the
// directory the mount shows, so a test can inspect what the FUSE mount did
// without going through it.
func BindfsNoRenameFlagsWithSource(t testing.TB) (mount, source string) {
	t.Helper()
	RequireRoot(t)
	bindfs := RequireCommand(t, "bindfs")
	_, err := os.Stat("/dev/fuse")
	Require(t, "/dev/fuse", err == nil, fmt.Sprint(err))

	base := t.TempDir()
	source = filepath.Join(base, "src")
	mount = filepath.Join(base, "mnt")
	for _, d := range []string{source, mount} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(bindfs, "-o", "attr_timeout=0,entry_timeout=0", source, mount).CombinedOutput()
	if err != nil {
		Require(t, "bindfs mount", false, fmt.Sprintf("bindfs %s %s: %v: %s", source, mount, err, bytes.TrimSpace(out)))
	}
	t.Cleanup(func() { unmount(t, mount) })
	if err := probeNoRenameFlags(mount); err != nil {
		Require(t, "a FUSE mount that rejects rename flags", false, err.Error())
	}
	return mount, source
}

// probeNoRenameFlags checks, on fresh files it removes again, that
// renameat2 flags are refused with EINVAL and link(2) works.
func probeNoRenameFlags(dir string) error {
	a := filepath.Join(dir, ".testfs-probe-a")
	b := filepath.Join(dir, ".testfs-probe-b")
	c := filepath.Join(dir, ".testfs-probe-c")
	defer func() {
		for _, p := range []string{a, b, c} {
			os.Remove(p)
		}
	}()
	for _, p := range []string{a, b} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			return fmt.Errorf("probe: %w", err)
		}
	}
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, c, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("renameat2(RENAME_NOREPLACE) on bindfs returned %v, want EINVAL", err)
	}
	err = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("renameat2(RENAME_EXCHANGE) on bindfs returned %v, want EINVAL", err)
	}
	if err := os.Link(a, c); err != nil {
		return fmt.Errorf("link on bindfs: %w", err)
	}
	return nil
}

var unshareOnce = sync.OnceValue(func() error {
	if !IsRoot() {
		return errors.New("not root")
	}
	out, err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "--mount", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("unshare --pid --fork --mount-proc --mount true: %v: %s", err, bytes.TrimSpace(out))
	}
	return nil
})

// UnshareAvailable reports whether this process can make new pid and mount
// namespaces with unshare(1) (`unshare --pid --fork --mount-proc`), as tests
// that force pid reuse or fake a boot id need. It runs the probe once.
func UnshareAvailable() bool { return unshareOnce() == nil }

// RequireUnshare applies [Require] to [UnshareAvailable].
func RequireUnshare(t testing.TB) {
	t.Helper()
	err := unshareOnce()
	Require(t, "unshare (pid and mount namespaces)", err == nil, fmt.Sprint(err))
}

func run(t testing.TB, argv ...string) {
	t.Helper()
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, bytes.TrimSpace(out))
	}
}

// unmount is the cleanup of every mount here. A mount that is still busy
// (a leaked descriptor or child process) is detached lazily, so the
// temporary directory can still be removed, and the test is failed: the leak
// is a bug in the test.
//
// It reports whether the filesystem is gone for good (not merely detached).
func unmount(t testing.TB, dir string) bool {
	t.Helper()
	err := unmountRetry(dir)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return true // EINVAL: not mounted any more (a failed Remount, say)
	}
	if lerr := unix.Unmount(dir, unix.MNT_DETACH); lerr != nil {
		t.Errorf("unmount %s: %v; lazy unmount: %v", dir, err, lerr)
		return false
	}
	t.Errorf("unmount %s: %v: something still had it open; detached it lazily", dir, err)
	return false
}

func unmountRetry(dir string) error {
	var err error
	for i := 0; i < 50; i++ {
		err = unix.Unmount(dir, 0)
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		// A process that just exited may not have closed its
		// descriptors yet.
		time.Sleep(20 * time.Millisecond)
	}
	return err
}
