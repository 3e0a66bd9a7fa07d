package liveness

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// Start time formats, the values records carry in start_time_format. A
// start time is only ever compared with one read the same way: the two
// formats have different resolutions and different clocks, so a mismatch
// across formats proves nothing.
const (
	// FormatLinuxProc is field 22 of /proc/<pid>/stat, the start time in
	// clock ticks since boot, as a decimal string. TypeScript peers write
	// this value (without naming the format) on Linux.
	FormatLinuxProc = "linux-proc-v1"
	// FormatPsUTC is `ps -o lstart= -p <pid>` under LC_ALL=C LANG=C TZ=UTC,
	// trimmed; used where /proc is absent (macOS). One-second resolution.
	FormatPsUTC = "ps-utc-v1"
)

// UnknownStartTime is written as the start time when no reader produced
// one. It is never proof of anything.
const UnknownStartTime = "unknown"

// Evidence is what a record says about the process that wrote it. Zero
// values mean "not available" and are never compared.
type Evidence struct {
	Pid int
	// StartTime is the process start time in StartTimeFormat, or
	// UnknownStartTime with an empty format.
	StartTime       string
	StartTimeFormat string
	// BootID identifies the boot the process runs in (Linux: the kernel's
	// random boot_id; macOS: kern.bootsessionuuid).
	BootID string
	// PidfdIno is the inode of a pidfd for the process on pidfs (Linux 6.9
	// and later), unique per process for the life of the boot.
	PidfdIno uint64
	// PidNS is the inode of the process's pid namespace.
	PidNS uint64
	// CreateTime is the process creation time on Windows (GetProcessTimes,
	// a FILETIME: 100 ns units since 1601), which with the pid names one
	// process: Windows frees a pid only when the last handle on its process
	// is closed, and the next process to get it is created later. It is
	// evidence the TypeScript peers neither write nor read (they write
	// start_time "unknown" on Windows); 0 elsewhere.
	CreateTime uint64
}

var self = sync.OnceValues(collectSelf)

// Self returns the evidence for the calling process. Evidence that cannot be
// read is left at its "not available" value (start time UnknownStartTime),
// as the TypeScript peers do, because failing every lock call on a host
// without /proc would be worse than a weaker record. Where the platform has
// no notion of the evidence at all (Windows), it returns the pid and
// UnknownStartTime with an error matching errors.ErrUnsupported. The result
// is computed once per process.
func Self() (Evidence, error) {
	return self()
}

func collectSelf() (Evidence, error) {
	pid := os.Getpid()
	e := Evidence{Pid: pid, StartTime: UnknownStartTime}
	if !supported {
		return e, fmt.Errorf("liveness: process evidence is %w", errUnsupported)
	}
	if v, f, err := StartTime(pid); err == nil {
		e.StartTime, e.StartTimeFormat = v, f
	}
	if id, err := BootID(); err == nil {
		e.BootID = id
	}
	if ino, err := PidfdIno(pid); err == nil {
		e.PidfdIno = ino
	}
	if ns, err := PidNS(pid); err == nil {
		e.PidNS = ns
	}
	if ct, err := CreateTime(pid); err == nil {
		e.CreateTime = ct
	}
	return e, nil
}

// StartTime reads the start time of pid in the format a record should carry
// on this platform: FormatLinuxProc where /proc is mounted, else FormatPsUTC;
// on macOS records carry none, so it is UnknownStartTime with an empty
// format (see startTimeWherePsOnly for why).
func StartTime(pid int) (value, format string, err error) {
	if err := checkPid(pid); err != nil {
		return "", "", err
	}
	return startTime(pid)
}

// StartTimeAs reads the start time of pid in the given format, for comparing
// with a recorded value. It fails for a format this platform cannot read.
func StartTimeAs(pid int, format string) (string, error) {
	if err := checkPid(pid); err != nil {
		return "", err
	}
	switch format {
	case FormatLinuxProc:
		return procStartTime(pid)
	case FormatPsUTC:
		return psStartTime(pid)
	}
	return "", fmt.Errorf("liveness: unknown start time format %q", format)
}

// BootID returns the identifier of the current boot.
func BootID() (string, error) { return bootID() }

// PidfdIno returns the inode of a pidfd for pid. It returns 0 and no error
// where pidfds do not have per-process inodes (before Linux 6.9, and on
// other systems), so a zero never counts as evidence.
func PidfdIno(pid int) (uint64, error) {
	if err := checkPid(pid); err != nil {
		return 0, err
	}
	return pidfdIno(pid)
}

// CreateTime returns the creation time of pid on Windows (see
// Evidence.CreateTime). It returns 0 and no error on other systems, so a
// zero never counts as evidence.
func CreateTime(pid int) (uint64, error) {
	if err := checkPid(pid); err != nil {
		return 0, err
	}
	return createTime(pid)
}

// PidNS returns the inode of the pid namespace of pid, or 0 with an error
// when it cannot be read. It returns 0 and no error on systems without pid
// namespaces.
func PidNS(pid int) (uint64, error) {
	if err := checkPid(pid); err != nil {
		return 0, err
	}
	return pidNS(pid)
}

// InitialPidNS reports whether the evidence was collected in the host's
// initial pid namespace, where the pid a record carries is the pid every
// reader outside a container sees. A process in another pid namespace (a
// toolbox-style container sharing the directory) records a pid that means
// nothing to a reader outside it, and a reader that does not know pid_ns
// (the TypeScript reference) would look it up in its own namespace.
//
// On Linux the test is the inode of /proc/self/ns/pid: the kernel gives the
// initial pid namespace the fixed inode PROC_PID_INIT_INO (0xEFFFFFFC, since
// Linux 3.8) and allocates every other namespace's from 0xF0000000 up, so
// the two never meet, whatever /proc the process sees (its own remounted
// /proc or its parent's: ns/pid of /proc/self always names the caller's
// namespace). Unlike NSpid in /proc/self/status it does not depend on which
// namespace's /proc is mounted. An unknown namespace (PidNS 0: /proc
// unreadable) is not the initial one: the answer fails closed. Platforms
// without pid namespaces answer true.
func (e Evidence) InitialPidNS() bool {
	if !pidNamespaces {
		return true
	}
	return e.PidNS == procPidInitIno
}

// procPidInitIno is the kernel's PROC_PID_INIT_INO.
const procPidInitIno = 0xEFFFFFFC

var errUnsupported = errors.ErrUnsupported

// commandTimeout bounds the helper commands this package runs (ps, ioreg),
// so a wedged tool cannot hang a lock call forever.
const commandTimeout = 10 * time.Second

// checkPid refuses pids that kill(2) and friends would not read as one
// process: 0 and negative values address process groups (kill(-1, 0)
// reaches every process), and values beyond pid_t would be truncated by the
// system call to some other, unrelated pid.
func checkPid(pid int) error {
	if pid <= 0 || pid > 1<<31-1 {
		return fmt.Errorf("liveness: invalid pid %d", pid)
	}
	return nil
}

// procStat is what this package needs from /proc/<pid>/stat.
type procStat struct {
	State     byte
	StartTime string
}

// parseProcStat parses one /proc/<pid>/stat line. The command name (field
// 2) is wrapped in parentheses but may itself contain spaces and ')', so the
// fields are counted from the LAST ')': the first token after it is field 3
// (state) and field 22 (starttime) is the 20th.
func parseProcStat(line string) (procStat, error) {
	open := strings.IndexByte(line, '(')
	close := strings.LastIndexByte(line, ')')
	if open < 0 || close < open {
		return procStat{}, errors.New("liveness: malformed /proc stat line: no command name")
	}
	fields := strings.Fields(line[close+1:])
	if len(fields) < 20 {
		return procStat{}, errors.New("liveness: malformed /proc stat line: too few fields")
	}
	if len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("liveness: malformed /proc stat line: state %q", fields[0])
	}
	start := fields[19]
	for i := 0; i < len(start); i++ {
		if start[i] < '0' || start[i] > '9' {
			return procStat{}, fmt.Errorf("liveness: malformed /proc stat line: start time %q", start)
		}
	}
	return procStat{State: fields[0][0], StartTime: start}, nil
}
