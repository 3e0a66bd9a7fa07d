package liveness

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/windows"
)

// Process evidence on Windows.
//
// What a record carries. The TypeScript reference writes start_time
// "unknown" on Windows (it has neither /proc nor a ps that prints lstart)
// and never compares a start time there: its incarnation check passes any
// record when neither of its readers produces a value. It does compare
// when one of them does, and a Windows machine can have a ps on its PATH
// that accepts -o lstart (Cygwin and MSYS2 package procps-ng): its text
// would never equal a value of ours, so a record whose start_time held
// anything but "unknown" would be judged another incarnation and a live Go
// holder's lock stolen. So Go records on Windows write start_time
// "unknown" with no format, exactly as the reference does (StartTime
// fails here, and Self leaves the start time unknown), and the creation
// time goes into an evidence field of its own (Evidence.CreateTime) that
// the reference ignores and the Judge compares.
//
// How a pid is probed. The reference probes with process.kill(pid, 0),
// which libuv implements as OpenProcess, then GetExitCodeProcess (anything
// but STILL_ACTIVE: the process has exited), then a zero-time wait (a
// process that exited with the code 259, STILL_ACTIVE's value, is
// signalled). ERROR_INVALID_PARAMETER from OpenProcess is ESRCH (no
// process has the pid), ERROR_ACCESS_DENIED is EPERM (the process exists;
// the reference counts it alive), anything else is an error it does not
// judge. signal0 answers the same way, with less access asked for
// (PROCESS_QUERY_LIMITED_INFORMATION, which Windows grants more widely
// than the PROCESS_TERMINATE libuv asks for), so it is refused less often;
// where it can still open the process and the reference could not, it may
// see that a process has exited where the reference says EPERM, and an
// exited process holds nothing, whatever its pid.
//
// What Windows does not give: a boot id (no source is adopted yet, so the
// boot rule is skipped and nothing is recorded), pid namespaces (none), and
// zombies in the Unix sense: a process that has exited while some handle
// on it is still open keeps its pid, and is reported both by signal0
// (ESRCH, as libuv does) and by zombie.

// pidNamespaces: the platform has pid namespaces (Evidence.InitialPidNS).
const pidNamespaces = false

const supported = true

// stillActive is STILL_ACTIVE, the exit code GetExitCodeProcess reports
// for a process that has not exited (and for one that exited with 259).
const stillActive = 259

func unsupportedErr(what string) error {
	return fmt.Errorf("liveness: %s is %w on windows", what, errUnsupported)
}

// startTime fails: a Windows record carries start_time "unknown" and its
// creation time in a field of its own (see the top of this file).
func startTime(int) (string, string, error) {
	return "", "", unsupportedErr("a start time in a format the TypeScript peers compare (records carry \"unknown\" and the creation time)")
}

func procStartTime(int) (string, error) { return "", unsupportedErr(FormatLinuxProc + " start time") }

func psStartTime(int) (string, error) { return "", unsupportedErr(FormatPsUTC + " start time") }

func bootID() (string, error) { return "", unsupportedErr("boot id") }

func pidfdIno(int) (uint64, error) { return 0, nil }

func pidNS(int) (uint64, error) { return 0, nil }

func sameProcClock(int) error { return nil }

// probeError is the answer of a process probe. It matches (errors.Is)
// syscall.ESRCH or syscall.EPERM when the probe proved one, so that the
// Judge reads it as it reads kill(2), and it unwraps to the Windows error.
type probeError struct {
	pid   int
	what  string        // what the probe found, or the call that failed
	errno syscall.Errno // syscall.ESRCH, syscall.EPERM, or 0 for neither
	err   error         // the Windows error, if any
}

func (e *probeError) Error() string {
	s := fmt.Sprintf("probing pid %d: %s", e.pid, e.what)
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	switch e.errno {
	case syscall.ESRCH:
		s += " (no such process)"
	case syscall.EPERM:
		s += " (the process exists; access denied)"
	}
	return s
}

func (e *probeError) Is(target error) bool { return e.errno != 0 && target == e.errno }

func (e *probeError) Unwrap() error { return e.err }

// classifyOpen turns a failed OpenProcess into the probe's answer, as libuv
// translates it for process.kill(pid, 0): ERROR_INVALID_PARAMETER is the
// one proof that no process has the pid (ESRCH); ERROR_ACCESS_DENIED
// proves the process exists (EPERM); anything else proves nothing.
func classifyOpen(pid int, err error) error {
	pe := &probeError{pid: pid, what: "OpenProcess", err: err}
	switch {
	case errors.Is(err, windows.ERROR_INVALID_PARAMETER):
		pe.errno = syscall.ESRCH
	case errors.Is(err, windows.ERROR_ACCESS_DENIED):
		pe.errno = syscall.EPERM
	}
	return pe
}

// openProcess opens pid for querying, with SYNCHRONIZE when the process
// grants it (to tell a process that exited with code 259 from a running
// one). synced reports whether it did.
func openProcess(pid int) (h windows.Handle, synced bool, err error) {
	const query = windows.PROCESS_QUERY_LIMITED_INFORMATION
	h, err = windows.OpenProcess(query|windows.SYNCHRONIZE, false, uint32(pid))
	if err == nil {
		return h, true, nil
	}
	if !errors.Is(err, windows.ERROR_ACCESS_DENIED) {
		return 0, false, classifyOpen(pid, err)
	}
	h, err = windows.OpenProcess(query, false, uint32(pid))
	if err != nil {
		return 0, false, classifyOpen(pid, err)
	}
	return h, false, nil
}

// exited reports whether the process h is open on has exited: its exit code
// is not STILL_ACTIVE, or (when h has SYNCHRONIZE) it is signalled.
func exited(pid int, h windows.Handle, synced bool) (bool, error) {
	var code uint32
	if err := windows.GetExitCodeProcess(h, &code); err != nil {
		return false, &probeError{pid: pid, what: "GetExitCodeProcess", err: err}
	}
	if code != stillActive {
		return true, nil
	}
	if !synced {
		// Running, or exited with 259: without SYNCHRONIZE the two cannot
		// be told apart, and "running" is the answer that keeps a lock.
		return false, nil
	}
	ev, err := windows.WaitForSingleObject(h, 0)
	switch {
	case err != nil:
		return false, &probeError{pid: pid, what: "WaitForSingleObject", err: err}
	case ev == windows.WAIT_OBJECT_0:
		return true, nil
	case ev == uint32(windows.WAIT_TIMEOUT):
		return false, nil
	}
	return false, &probeError{pid: pid, what: fmt.Sprintf("WaitForSingleObject answered %#x", ev)}
}

// signal0 is the Windows kill(pid, 0) (see the top of this file).
func signal0(pid int) error {
	h, synced, err := openProcess(pid)
	if err != nil {
		return err
	}
	defer windows.CloseHandle(h)
	gone, err := exited(pid, h, synced)
	if err != nil {
		return err
	}
	if gone {
		return &probeError{pid: pid, what: "the process has exited (a handle on it keeps its pid)", errno: syscall.ESRCH}
	}
	return nil
}

// zombie reports whether pid names a process that has exited but is kept
// by an open handle, the Windows form of a zombie.
func zombie(pid int) (bool, error) {
	h, synced, err := openProcess(pid)
	if err != nil {
		return false, err
	}
	defer windows.CloseHandle(h)
	return exited(pid, h, synced)
}

// createTime returns the creation time of pid from GetProcessTimes, as a
// FILETIME (100 ns units since 1601). It reads it for an exited process
// kept by a handle too: the time names the process, not its state.
func createTime(pid int) (uint64, error) {
	h, _, err := openProcess(pid)
	if err != nil {
		return 0, err
	}
	defer windows.CloseHandle(h)
	var created, exit, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exit, &kernel, &user); err != nil {
		return 0, &probeError{pid: pid, what: "GetProcessTimes", err: err}
	}
	ct := uint64(created.HighDateTime)<<32 | uint64(created.LowDateTime)
	if ct == 0 {
		return 0, &probeError{pid: pid, what: "GetProcessTimes reported a zero creation time"}
	}
	return ct, nil
}
