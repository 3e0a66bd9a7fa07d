package liveness

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/exactfs/exactfs/internal/sys"
)

// pidNamespaces: the platform has pid namespaces (Evidence.InitialPidNS).
const pidNamespaces = false

const supported = true

// startTime is the start time records written here carry: none
// (UnknownStartTime), because no ps text is safe from every TypeScript
// reader (startTimeWherePsOnly says why). Records of earlier builds that
// carry FormatPsUTC are still compared, through StartTimeAs.
func startTime(int) (string, string, error) {
	v, f := startTimeWherePsOnly()
	return v, f, nil
}

func procStartTime(int) (string, error) {
	return "", fmt.Errorf("liveness: %s start times are %w on darwin (no /proc)", FormatLinuxProc, errUnsupported)
}

// bootID returns kern.bootsessionuuid, which the kernel generates afresh at
// every boot and keeps for the life of the boot, checked and lower-cased
// by internal/sys (the form the store's lease records carry too).
func bootID() (string, error) {
	id, err := sys.BootSessionID()
	if err != nil {
		return "", fmt.Errorf("liveness: boot id: %w", err)
	}
	return id, nil
}

// pidfdIno is 0: macOS has no pidfds.
func pidfdIno(int) (uint64, error) { return 0, nil }

// pidNS is 0: macOS has no pid namespaces.
func pidNS(int) (uint64, error) { return 0, nil }

func signal0(pid int) error {
	return os.NewSyscallError("kill", syscall.Kill(pid, 0))
}

// sZomb is SZOMB from <sys/proc.h>: the process has exited and waits to be
// reaped.
const sZomb = 5

func zombie(pid int) (bool, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return false, fmt.Errorf("liveness: state of pid %d: %w", pid, err)
	}
	if int(kp.Proc.P_pid) != pid {
		return false, fmt.Errorf("liveness: state of pid %d: kernel answered for pid %d", pid, kp.Proc.P_pid)
	}
	return kp.Proc.P_stat == sZomb, nil
}

// sameProcClock has nothing to check: macOS has no time namespaces.
func sameProcClock(int) error { return nil }
