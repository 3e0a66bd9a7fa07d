package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// On Windows CMD's tree is kept inside the lock by a Job object, not by a
// guard process (guard.go): exactfs creates a job whose limit
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE makes the system terminate every
// process in it when the last handle to the job is closed, starts CMD
// suspended, puts it in the job, and only then lets it run. Every process
// CMD starts is in the job from its creation (children inherit their
// parent's job), so nothing of the tree can start outside it. exactfs holds
// the only handle (not inheritable, so CMD has none): when exactfs dies,
// TerminateProcess included, the system closes it and kills the tree; when
// CMD exits, exactfs closes it after the wait, which kills what CMD left
// running in the background at once (Windows has no SIGTERM to give them
// first), so no leftover goes on unlocked once exactfs releases. A Ctrl-C
// or termination exactfs receives ends the whole job.
//
// What remains: a process started outside the tree (through a service, the
// task scheduler, WMI) is not in the job; and a job with
// JOB_OBJECT_LIMIT_BREAKAWAY_OK set by an outer job would let a child
// created with CREATE_BREAKAWAY_FROM_JOB leave, which this job does not
// allow.

// guardArg is recognised on Windows too, and refused: the Job object does
// the guard's work, so there is no guard process here.
const guardArg = "__exactfs-guard"

func runGuard([]string) int {
	fmt.Fprintln(os.Stderr, "exactfs: there is no guard process on Windows (a Job object keeps the command's tree)")
	return exitUsage
}

// start starts the command in a Job object that dies with exactfs (see
// the top of this file). A command that cannot be started is reported with
// the shell's statuses: 127 not found, 126 not executable; one that cannot
// be put in a job is not run at all (126), since it could outlive the lock.
func (c *child) start(e *env) (*running, error) {
	job, err := newKillOnCloseJob()
	if err != nil {
		fmt.Fprintf(e.stderr, "exactfs: cannot run %s: creating the Job object that ends it with exactfs failed: %v\n", c.argv[0], err)
		return nil, exitStatus(exitCannotExec)
	}
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	cmd.Env = append(os.Environ(), c.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED}
	if c.shell {
		// cmd.exe's own quoting, not Go's (shell_windows.go).
		cmd.SysProcAttr.CmdLine = cmdExeLine(c.argv)
	}
	if err := cmd.Start(); err != nil {
		windows.CloseHandle(job)
		status := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			status = exitNotFound
		}
		fmt.Fprintf(e.stderr, "exactfs: cannot run %s: %v\n", c.argv[0], err)
		return nil, exitStatus(status)
	}
	if err := joinAndResume(job, cmd.Process.Pid); err != nil {
		// The command never ran: end it, and its job, before saying so.
		windows.TerminateJobObject(job, 1)
		cmd.Process.Kill()
		cmd.Wait()
		windows.CloseHandle(job)
		fmt.Fprintf(e.stderr, "exactfs: cannot run %s: putting it in the Job object that ends it with exactfs failed: %v; it was not run\n", c.argv[0], err)
		return nil, exitStatus(exitCannotExec)
	}
	var mu sync.Mutex
	open := true
	end := func(close bool) {
		mu.Lock()
		defer mu.Unlock()
		if !open {
			return
		}
		if close {
			open = false
			windows.CloseHandle(job) // kills what is left of the tree
			return
		}
		windows.TerminateJobObject(job, 1)
	}
	return &running{
		cmd:    cmd,
		signal: func(os.Signal) { end(false) },
		after:  func() { end(true) },
	}, nil
}

// newKillOnCloseJob creates an unnamed, non-inheritable Job object whose
// processes the system terminates when its last handle closes.
func newKillOnCloseJob() (windows.Handle, error) {
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return 0, err
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(job)
		return 0, err
	}
	return job, nil
}

var procNtResumeProcess = windows.NewLazySystemDLL("ntdll.dll").NewProc("NtResumeProcess")

// joinAndResume puts the suspended process pid in job and lets it run. The
// pid is still the command's: exec holds a handle on it, so it cannot be
// reused.
func joinAndResume(job windows.Handle, pid int) error {
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.PROCESS_SUSPEND_RESUME, false, uint32(pid))
	if err != nil {
		return fmt.Errorf("opening the process: %w", err)
	}
	defer windows.CloseHandle(ph)
	if err := windows.AssignProcessToJobObject(job, ph); err != nil {
		return fmt.Errorf("AssignProcessToJobObject: %w", err)
	}
	if err := procNtResumeProcess.Find(); err != nil {
		return err
	}
	if st, _, _ := procNtResumeProcess.Call(uintptr(ph)); st != 0 {
		return fmt.Errorf("NtResumeProcess: %w", windows.NTStatus(st))
	}
	return nil
}
