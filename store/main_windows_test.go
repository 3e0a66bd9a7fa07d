package store

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
	"golang.org/x/sys/windows"
)

// TestMain runs the tests, or, with winHelperEnv set, a helper mode of a
// test that re-executes the binary as a child process (winHelpers).
func TestMain(m *testing.M) {
	mode := os.Getenv(winHelperEnv)
	if mode == "" {
		os.Exit(m.Run())
	}
	h := winHelpers[mode]
	if h == nil {
		fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
		os.Exit(2)
	}
	sys.OpenGateForTest()
	sys.WineOwnerOnlyForTest()
	if err := h(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

const winHelperEnv = "STORE_WINDOWS_TEST_HELPER"

var winHelpers = map[string]func() error{
	"lease-hold":   winHelperLeaseHold,
	"dirlock-hold": winHelperDirLockHold,
}

// winHelperLeaseHold acquires the lease STORE_NAME in STORE_DIR (lease
// STORE_LEASE_MS, heartbeat STORE_HEARTBEAT_MS, no attestation when
// STORE_NOATTEST is set), writes its fence to STORE_READY and waits to be
// killed.
func winHelperLeaseHold() error {
	ms := func(k string) time.Duration {
		n, _ := strconv.Atoi(os.Getenv(k))
		return time.Duration(n) * time.Millisecond
	}
	opts := []LeaseOption{LeaseDuration(ms("STORE_LEASE_MS")), HeartbeatInterval(ms("STORE_HEARTBEAT_MS"))}
	if os.Getenv("STORE_NOATTEST") != "" {
		opts = append(opts, withoutAttestation())
	}
	l, err := AcquireLease(context.Background(), os.Getenv("STORE_DIR"), os.Getenv("STORE_NAME"), opts...)
	if err != nil {
		return err
	}
	if err := writeReady(strconv.FormatUint(l.Fence(), 10)); err != nil {
		return err
	}
	time.Sleep(time.Hour)
	return nil
}

// winHelperDirLockHold takes the commit lock of STORE_DIR (exactfs's
// Dir.TryLock, as lockDir does), writes STORE_READY and waits to be
// killed.
func winHelperDirLockHold() error {
	d, err := exactfs.OpenDir(os.Getenv("STORE_DIR"))
	if err != nil {
		return err
	}
	if ok, err := d.TryLock(); !ok || err != nil {
		return fmt.Errorf("the helper could not lock %s: %v %v", d.Name(), ok, err)
	}
	if err := writeReady(""); err != nil {
		return err
	}
	time.Sleep(time.Hour)
	return nil
}

// writeReady tells the test the helper is ready: STORE_READY appears
// with its content whole (written aside, then renamed).
func writeReady(content string) error {
	p := os.Getenv("STORE_READY")
	if err := os.WriteFile(p+".tmp", []byte(content), 0o600); err != nil {
		return err
	}
	return os.Rename(p+".tmp", p)
}

// winOpenGate opens internal/sys's gate for one test (every program keeps
// it shut) and, under Wine only, the owner-only substitute
// (sys.WineOwnerOnlyForTest: Wine keeps no DACL, so without it no store
// opens there). On real Windows the DACLs are proved for real.
func winOpenGate(t testing.TB) {
	t.Helper()
	closeGate := sys.OpenGateForTest()
	restore, wine := sys.WineOwnerOnlyForTest()
	if wine {
		t.Log("under Wine: owner-only is proved by the owner alone (Wine keeps no DACL; see .ci/wine/needs-real-windows.md)")
	}
	t.Cleanup(func() { restore(); closeGate() })
}

// winChild is a helper process of a test, killed (TerminateProcess) and
// reaped by the test's cleanup at the latest.
type winChild struct {
	cmd    *exec.Cmd
	exited chan error
	ready  string
}

// startWinChild starts the test binary in helper mode and waits until it
// has written its ready file (Wine starts a process slowly: up to a
// minute), returning what it wrote there.
func startWinChild(t *testing.T, mode string, env ...string) (*winChild, string) {
	t.Helper()
	c := &winChild{exited: make(chan error, 1), ready: filepath.Join(t.TempDir(), "ready")}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), append([]string{winHelperEnv + "=" + mode, "STORE_READY=" + c.ready}, env...)...)
	c.cmd.Stdout, c.cmd.Stderr = os.Stderr, os.Stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.exited <- c.cmd.Wait() }()
	t.Cleanup(c.kill)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(c.ready); err == nil {
			return c, string(b)
		}
		select {
		case err := <-c.exited:
			c.exited <- err
			t.Fatalf("the %s helper exited before it was ready: %v", mode, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the %s helper was not ready after a minute", mode)
		}
	}
}

// kill terminates the child (TerminateProcess) and reaps it; again does
// nothing.
func (c *winChild) kill() {
	if c.exited == nil {
		return
	}
	c.cmd.Process.Kill()
	<-c.exited
	c.exited = nil
}

// testPlatform is winOpenGate, for the tests shared with Unix.
func testPlatform(t testing.TB) { t.Helper(); winOpenGate(t) }

// testOwnerOnlyDir makes the directory d owner-only the Windows way (a
// protected DACL for the user alone; under Wine the owner check alone,
// see winOpenGate): a directory os.Mkdir made inherits its parent's DACL.
func testOwnerOnlyDir(t testing.TB, d string) {
	t.Helper()
	if err := ApplyOwnerOnlyPath(d, Directory); err != nil {
		t.Fatal(err)
	}
}

// inode is the file id of p, as exactfs reads it (Lstat's identity).
func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := exactfs.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(exactfs.Identity).Ino
}

// openFds counts the process's open handles (GetProcessHandleCount): the
// Windows count of what a call may leave open. (Under Wine, /proc/self/fd
// would count Wine's own Unix descriptors, which it caches.)
func openFds(t *testing.T) int {
	t.Helper()
	var n uint32
	r, _, err := windows.NewLazySystemDLL("kernel32.dll").NewProc("GetProcessHandleCount").Call(uintptr(windows.CurrentProcess()), uintptr(unsafe.Pointer(&n)))
	if r == 0 {
		t.Skip("GetProcessHandleCount failed, so handles cannot be counted:", err)
	}
	return int(n)
}

// skipUnderWine skips a test of Windows behaviour Wine 8 does not have
// (why says what); on real Windows the test runs. Each such test is
// listed in .ci/wine/needs-real-windows.md.
func skipUnderWine(t *testing.T, why string) {
	t.Helper()
	if windowsUnderWine() {
		t.Skip("needs real Windows: " + why)
	}
}
