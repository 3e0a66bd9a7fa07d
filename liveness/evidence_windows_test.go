package liveness

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The process evidence on Windows, on real child processes. These run
// under Wine in CI (.ci/wine-lane.sh) and on real Windows.

// exitCodeEnv is the exit code of the "exit" helper.
const exitCodeEnv = "LIVENESS_TEST_EXIT_CODE"

func init() {
	helpers["exit"] = func() int {
		code, err := strconv.Atoi(os.Getenv(exitCodeEnv))
		if err != nil {
			return 2
		}
		return code
	}
}

const winHost = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func winJudge() *Judge { return &Judge{Host: FixedHostIdentity(winHost)} }

// goRecord is the owner a Go record on Windows carries for pid: start time
// "unknown" without a format (what the reference writes there) and the
// creation time.
func goRecord(pid int, ct uint64) Owner {
	return Owner{Pid: pid, StartTime: UnknownStartTime, HostID: winHost, CreateTime: ct}
}

// referenceRecord is the owner the TypeScript reference writes on Windows.
func referenceRecord(pid int) Owner {
	return Owner{Pid: pid, StartTime: UnknownStartTime, HostID: winHost}
}

// holdProcess opens pid the way a test keeps its pid from being freed:
// while any handle on a process is open, Windows keeps the process object
// and its pid, even after it has exited.
// The handle is closed by release, or at the end of the test.
func holdProcess(t *testing.T, pid int) (h windows.Handle, release func()) {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE|windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		t.Fatalf("OpenProcess(%d): %v", pid, err)
	}
	var once sync.Once
	release = func() { once.Do(func() { windows.CloseHandle(h) }) }
	t.Cleanup(release)
	return h, release
}

func waitExit(t *testing.T, h windows.Handle) {
	t.Helper()
	if ev, err := windows.WaitForSingleObject(h, windows.INFINITE); err != nil || ev != windows.WAIT_OBJECT_0 {
		t.Fatalf("waiting for the child: %#x, %v", ev, err)
	}
}

func mustCreateTime(t *testing.T, pid int) uint64 {
	t.Helper()
	ct, err := CreateTime(pid)
	if err != nil || ct == 0 {
		t.Fatalf("CreateTime(%d) = %d, %v", pid, ct, err)
	}
	return ct
}

func wantVerdict(t *testing.T, what string, o Owner, want Verdict, reason string) {
	t.Helper()
	got := winJudge().Judge(o)
	if got.Verdict != want || !strings.Contains(got.Reason, reason) {
		t.Fatalf("%s: Judge(%+v) = %v, want %v (%s)", what, o, got, want, reason)
	}
	t.Logf("%s: %v", what, got)
}

func wantSignal(t *testing.T, pid int, want error) error {
	t.Helper()
	err := (System{}).Signal(pid)
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("Signal(%d) = %v, want %v", pid, err, want)
	}
	return err
}

// TestWindowsLiveChild: a running child is alive to the probe, whether the
// record is ours (creation time matches) or the reference's (the probe
// alone); a creation time other than the child's at its pid proves reuse.
func TestWindowsLiveChild(t *testing.T) {
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	wantSignal(t, pid, nil)
	if z, err := (System{}).Zombie(pid); err != nil || z {
		t.Fatalf("Zombie(%d) = %v, %v for a running child", pid, z, err)
	}
	ct := mustCreateTime(t, pid)
	wantVerdict(t, "our record", goRecord(pid, ct), Alive, "creation time matches")
	wantVerdict(t, "the reference's record", referenceRecord(pid), Alive, "start time unknown")
	wantVerdict(t, "our record, another creation time", goRecord(pid, ct-1), Dead, "pid reused: creation time differs")
	wantVerdict(t, "our record, another host", Owner{Pid: pid, StartTime: UnknownStartTime, HostID: "other", CreateTime: ct - 1}, Alive, "foreign host")
}

// TestWindowsExitedChild: a child that exited is dead while a handle keeps
// its pid (the Windows zombie: GetExitCodeProcess no longer says
// STILL_ACTIVE), also when it exited with 259, STILL_ACTIVE's own value,
// which only the wait on the process tells apart; and dead once the last
// handle is closed and the pid is free (or taken by another process, whose
// creation time differs).
func TestWindowsExitedChild(t *testing.T) {
	for _, code := range []int{0, 3, stillActive} {
		t.Run("code "+strconv.Itoa(code), func(t *testing.T) {
			cmd := helperCommand(t, "exit", exitCodeEnv+"="+strconv.Itoa(code))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			h, release := holdProcess(t, pid)
			ct := mustCreateTime(t, pid)
			waitExit(t, h)
			cmd.Wait() // Go's own handle is closed; ours keeps the pid
			var got uint32
			if err := windows.GetExitCodeProcess(h, &got); err != nil || got != uint32(code) {
				t.Fatalf("exit code %d, %v; want %d", got, err, code)
			}
			err := wantSignal(t, pid, syscall.ESRCH)
			t.Logf("Signal: %v", err)
			if z, err := (System{}).Zombie(pid); err != nil || !z {
				t.Fatalf("Zombie(%d) = %v, %v for an exited child kept by a handle", pid, z, err)
			}
			if again := mustCreateTime(t, pid); again != ct {
				t.Fatalf("creation time changed when the child exited: %d then %d", ct, again)
			}
			wantVerdict(t, "our record", goRecord(pid, ct), Dead, "no such process")
			wantVerdict(t, "the reference's record", referenceRecord(pid), Dead, "no such process")

			release()
			wantGone(t, pid, ct)
		})
	}
}

// wantGone checks the verdicts for a child after every handle of this
// process on it is closed: its pid is free (OpenProcess:
// ERROR_INVALID_PARAMETER), or still kept by a handle somewhere else (Wine
// keeps an exited child's process object for a while), or was given to a
// new process, whose creation time tells it from the child. Dead in every
// case.
func wantGone(t *testing.T, pid int, ct uint64) {
	t.Helper()
	err := (System{}).Signal(pid)
	switch {
	case err == nil:
		// Reused already: only our record can tell.
		t.Logf("pid %d was reused at once", pid)
		wantVerdict(t, "our record, pid reused", goRecord(pid, ct), Dead, "creation time differs")
		return
	case !errors.Is(err, syscall.ESRCH):
		t.Fatalf("Signal(%d) = %v, want ESRCH", pid, err)
	case errors.Is(err, windows.ERROR_INVALID_PARAMETER):
		t.Logf("pid %d is free", pid)
	default:
		t.Logf("pid %d is still kept: %v", pid, err)
	}
	wantVerdict(t, "our record, handles closed", goRecord(pid, ct), Dead, "no such process")
	wantVerdict(t, "the reference's record, handles closed", referenceRecord(pid), Dead, "no such process")
}

// TestWindowsTerminatedChild: a child killed with TerminateProcess (what
// the Windows kill is) is dead at once, while a handle keeps its pid and
// after.
func TestWindowsTerminatedChild(t *testing.T) {
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	h, release := holdProcess(t, pid)
	ct := mustCreateTime(t, pid)
	wantVerdict(t, "before the kill", goRecord(pid, ct), Alive, "creation time matches")
	if err := windows.TerminateProcess(h, 9); err != nil {
		t.Fatal(err)
	}
	waitExit(t, h)
	wantSignal(t, pid, syscall.ESRCH)
	wantVerdict(t, "killed, pid kept by a handle", goRecord(pid, ct), Dead, "no such process")
	cmd.Wait()
	release()
	wantGone(t, pid, ct)
}

// TestWindowsNoSuchPid: a pid no process has is dead, as libuv's kill(pid,
// 0) says ESRCH for it; the answer unwraps to the Windows error.
func TestWindowsNoSuchPid(t *testing.T) {
	pid := unusedPid(t)
	err := wantSignal(t, pid, syscall.ESRCH)
	if !errors.Is(err, windows.ERROR_INVALID_PARAMETER) {
		t.Fatalf("Signal(%d) = %v, want it to unwrap to ERROR_INVALID_PARAMETER", pid, err)
	}
	if _, err := CreateTime(pid); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("CreateTime(%d) = %v, want ESRCH", pid, err)
	}
	wantVerdict(t, "our record", goRecord(pid, 1), Dead, "no such process")
	wantVerdict(t, "the reference's record", referenceRecord(pid), Dead, "no such process")
}

// unusedPid returns a pid that no process in a snapshot of the system has
// (Windows pids are multiples of 4; the low bits of a pid are ignored by
// OpenProcess, so only multiples of 4 are tried).
func unusedPid(t *testing.T) int {
	t.Helper()
	snap, err := windows.CreateToolhelp32Snapshot(windows.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer windows.CloseHandle(snap)
	used := map[uint32]bool{}
	e := windows.ProcessEntry32{Size: uint32(unsafe.Sizeof(windows.ProcessEntry32{}))}
	for err = windows.Process32First(snap, &e); err == nil; err = windows.Process32Next(snap, &e) {
		used[e.ProcessID] = true
	}
	if !used[uint32(os.Getpid())] {
		t.Fatalf("the process snapshot does not list this process (%d): %v", os.Getpid(), err)
	}
	for pid := uint32(1 << 30); pid > 1<<29; pid -= 4 << 20 {
		if !used[pid] {
			return int(pid)
		}
	}
	t.Fatal("no unused pid found")
	return 0
}

// TestWindowsCreateTimeStable: the creation time of a process is the same
// on every read, Self carries ours, and a child was created no earlier
// than its parent.
func TestWindowsCreateTimeStable(t *testing.T) {
	self := mustCreateTime(t, os.Getpid())
	for range 3 {
		if again := mustCreateTime(t, os.Getpid()); again != self {
			t.Fatalf("our creation time changed: %d then %d", self, again)
		}
	}
	e, err := Self()
	if err != nil || e.CreateTime != self {
		t.Fatalf("Self() = %+v, %v; want CreateTime %d", e, err, self)
	}
	cmd := startSleeper(t)
	child := mustCreateTime(t, cmd.Process.Pid)
	if child < self {
		t.Fatalf("the child's creation time %d is before its parent's %d", child, self)
	}
	if again := mustCreateTime(t, cmd.Process.Pid); again != child {
		t.Fatalf("the child's creation time changed: %d then %d", child, again)
	}
}

// TestWindowsSelfEvidence: what a Go record on Windows carries. The start
// time is "unknown" without a format, as the reference writes it there, so
// a reference peer never compares it (a ps on its PATH that answers would
// otherwise make it judge a live Go holder another incarnation); the
// creation time is the extra evidence. No boot id, no pid namespace.
func TestWindowsSelfEvidence(t *testing.T) {
	e, err := Self()
	if err != nil {
		t.Fatalf("Self() = %+v, %v", e, err)
	}
	want := Evidence{Pid: os.Getpid(), StartTime: UnknownStartTime, CreateTime: mustCreateTime(t, os.Getpid())}
	if e != want {
		t.Fatalf("Self() = %+v, want %+v", e, want)
	}
	if !e.InitialPidNS() {
		t.Fatal("InitialPidNS() is false on a platform without pid namespaces")
	}
	if _, _, err := StartTime(os.Getpid()); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("StartTime = %v, want unsupported: a record here carries \"unknown\"", err)
	}
	for _, f := range []string{FormatLinuxProc, FormatPsUTC} {
		if v, err := StartTimeAs(os.Getpid(), f); !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("StartTimeAs(%s) = %q, %v; want unsupported", f, v, err)
		}
	}
	if _, err := BootID(); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("BootID = %v, want unsupported (no boot id source on Windows)", err)
	}
	wantVerdict(t, "our own record", e.Owner(winHost), Alive, "creation time matches")
}

// TestWindowsOpenProcessAnswers: what each OpenProcess failure proves, as
// libuv's kill(pid, 0) reads it: ERROR_INVALID_PARAMETER is no such
// process (Dead), ERROR_ACCESS_DENIED a process that exists (Alive: the
// reference's EPERM), anything else nothing (Unknown). Access denied
// cannot be produced under Wine (every process is the same user's), so
// the answers are fed to the Judge through a probe.
func TestWindowsOpenProcessAnswers(t *testing.T) {
	for _, tc := range []struct {
		err    error
		errno  error
		want   Verdict
		reason string
	}{
		{windows.ERROR_INVALID_PARAMETER, syscall.ESRCH, Dead, "no such process"},
		{windows.ERROR_ACCESS_DENIED, syscall.EPERM, Alive, "EPERM"},
		{windows.ERROR_NOT_ENOUGH_MEMORY, nil, Unknown, "kill(pid, 0) failed"},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			err := classifyOpen(4242, tc.err)
			if !errors.Is(err, tc.err) {
				t.Fatalf("%v does not unwrap to %v", err, tc.err)
			}
			for _, e := range []error{syscall.ESRCH, syscall.EPERM} {
				if errors.Is(err, e) != (e == tc.errno) {
					t.Fatalf("errors.Is(%v, %v) = %v", err, e, !(e == tc.errno))
				}
			}
			j := Judge{Host: FixedHostIdentity(winHost), Probe: signalProbe{err: err}}
			for _, o := range []Owner{goRecord(4242, 5), referenceRecord(4242)} {
				if got := j.Judge(o); got.Verdict != tc.want || !strings.Contains(got.Reason, tc.reason) {
					t.Fatalf("Judge(%+v) = %v, want %v (%s)", o, got, tc.want, tc.reason)
				}
			}
		})
	}
}

// signalProbe answers every probe of the process with the OpenProcess
// failure err, as the system does: the zombie and creation time probes
// open the process the same way.
type signalProbe struct {
	System
	err error
}

func (p signalProbe) Signal(int) error               { return p.err }
func (p signalProbe) Zombie(int) (bool, error)       { return false, p.err }
func (p signalProbe) CreateTime(int) (uint64, error) { return 0, p.err }
