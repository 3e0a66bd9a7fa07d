//go:build !linux

package testfs

import (
	"runtime"
	"testing"
)

// The filesystems these helpers make need Linux (loop devices, tmpfs,
// FS_IOC_SHUTDOWN, FUSE with bindfs). Elsewhere every helper stops the test
// through Require.

const notLinux = "testfs mounts need Linux, this is " + runtime.GOOS

// Tmpfs is unavailable off Linux; see the Linux documentation.
func Tmpfs(t testing.TB) string { t.Helper(); Require(t, "tmpfs", false, notLinux); return "" }

// LoopXFS is unavailable off Linux.
func LoopXFS(t testing.TB, sizeMB int) string {
	t.Helper()
	Require(t, "loop-mounted xfs", false, notLinux)
	return ""
}

// LoopExt4 is unavailable off Linux.
func LoopExt4(t testing.TB, sizeMB int) string {
	t.Helper()
	Require(t, "loop-mounted ext4", false, notLinux)
	return ""
}

// Shutdown is unavailable off Linux.
func Shutdown(t testing.TB, mountpoint string) {
	t.Helper()
	Require(t, "filesystem shutdown", false, notLinux)
}

// Remount is unavailable off Linux.
func Remount(t testing.TB, mountpoint string) {
	t.Helper()
	Require(t, "loop remount", false, notLinux)
}

// BindfsNoRenameFlags is unavailable off Linux.
func BindfsNoRenameFlags(t testing.TB) string {
	t.Helper()
	Require(t, "bindfs", false, notLinux)
	return ""
}

// BindfsNoRenameFlagsWithSource is unavailable off Linux.
func BindfsNoRenameFlagsWithSource(t testing.TB) (mount, source string) {
	t.Helper()
	Require(t, "bindfs", false, notLinux)
	return "", ""
}

// UnshareAvailable is false off Linux.
func UnshareAvailable() bool { return false }

// RequireUnshare applies Require to UnshareAvailable.
func RequireUnshare(t testing.TB) {
	t.Helper()
	Require(t, "unshare (pid and mount namespaces)", false, notLinux)
}

// LoopExt4With is unavailable off Linux.
func LoopExt4With(t testing.TB, sizeMB int, mkfsArgs []string, mountOptions string) string {
	t.Helper()
	Require(t, "loop-mounted ext4", false, notLinux)
	return ""
}

// FillData is unavailable off Linux.
func FillData(t testing.TB, dir string) string {
	t.Helper()
	Require(t, "a filesystem to fill", false, notLinux)
	return ""
}

// FillInodes is unavailable off Linux.
func FillInodes(t testing.TB, dir string) string {
	t.Helper()
	Require(t, "a filesystem to fill", false, notLinux)
	return ""
}

// RemountReadOnly is unavailable off Linux.
func RemountReadOnly(t testing.TB, mountpoint string) {
	t.Helper()
	Require(t, "remount", false, notLinux)
}

// RemountReadWrite is unavailable off Linux.
func RemountReadWrite(t testing.TB, mountpoint string) {
	t.Helper()
	Require(t, "remount", false, notLinux)
}

// ForceReadOnly is unavailable off Linux.
func ForceReadOnly(t testing.TB, mountpoint string) {
	t.Helper()
	Require(t, "ext4 trigger_fs_error", false, notLinux)
}

// ForceReadOnlyCommand is unavailable off Linux.
func ForceReadOnlyCommand(t testing.TB, mountpoint string) string {
	t.Helper()
	Require(t, "ext4 trigger_fs_error", false, notLinux)
	return ""
}
