package liveness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// pidNamespaces: the platform has pid namespaces (Evidence.InitialPidNS).
const pidNamespaces = true

const supported = true

func startTime(pid int) (string, string, error) {
	v, err := procStartTime(pid)
	if err == nil {
		return v, FormatLinuxProc, nil
	}
	// Only a host without /proc falls back to ps; a process that is merely
	// gone must not be given a start time from another reader.
	if !procMounted() {
		v, perr := psStartTime(pid)
		if perr == nil {
			return v, FormatPsUTC, nil
		}
		return "", "", perr
	}
	return "", "", err
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// procPath returns /proc/<pid>/<name>, or an error when /proc does not
// number processes the way our pid namespace does.
//
// A process in a new pid namespace that kept its parent's /proc (unshare
// --pid without remounting /proc, some sandboxes) sees pids of its own
// namespace in kill(2) but of another namespace in /proc: /proc/1 is then
// not our pid 1. Reading another process's start time there and calling
// the mismatch "reused" would steal live locks, so such a /proc is not
// used for other processes at all. /proc/self always names the caller.
func procPath(pid int, name string) (string, error) {
	if pid == os.Getpid() {
		return "/proc/self/" + name, nil
	}
	if !procIsOurs() {
		return "", errForeignProc
	}
	return "/proc/" + strconv.Itoa(pid) + "/" + name, nil
}

var errForeignProc = errors.New("liveness: /proc belongs to another pid namespace than this process")

// procIsOurs reports whether /proc numbers processes in our pid namespace:
// the pid it shows for /proc/self is the one getpid returns. The answer
// cannot change for the life of the process unless /proc is remounted.
var procIsOurs = sync.OnceValue(func() bool {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return false
	}
	pid, _, _ := strings.Cut(string(b), " ")
	return pid == strconv.Itoa(os.Getpid())
})

func readProcStat(pid int) (procStat, error) {
	path, err := procPath(pid, "stat")
	if err != nil {
		return procStat{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, err
	}
	return parseProcStat(string(b))
}

func procStartTime(pid int) (string, error) {
	st, err := readProcStat(pid)
	if err != nil {
		return "", err
	}
	return st.StartTime, nil
}

const bootIDFile = "/proc/sys/kernel/random/boot_id"

func bootID() (string, error) {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return "", fmt.Errorf("liveness: boot id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("liveness: boot id: %s is empty", bootIDFile)
	}
	return id, nil
}

func pidNS(pid int) (uint64, error) {
	path, err := procPath(pid, "ns/pid")
	if err != nil {
		return 0, err
	}
	return nsInode(path)
}

func signal0(pid int) error {
	return os.NewSyscallError("kill", syscall.Kill(pid, 0))
}

// zombie reports whether pid has exited and waits only to be reaped.
//
// State Z of the thread-group leader is not enough: a leader that called
// pthread_exit while other threads run is shown as Z too, and that process
// is alive. Its live threads are still listed in /proc/<pid>/task, whereas
// the other threads of a process that exited are released at once; so the
// process is a zombie only if no task besides the leader remains.
func zombie(pid int) (bool, error) {
	if pid == os.Getpid() {
		// The caller is running, so it is not a zombie; and through
		// /proc/self the task names below could be another namespace's.
		return false, nil
	}
	st, err := readProcStat(pid)
	if err != nil {
		return false, err
	}
	if st.State != 'Z' && st.State != 'X' {
		return false, nil
	}
	path, err := procPath(pid, "task")
	if err != nil {
		return false, err
	}
	tasks, err := os.ReadDir(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// The leader was reaped between the two reads: gone either way.
			return true, nil
		}
		return false, err
	}
	leader := strconv.Itoa(pid)
	for _, t := range tasks {
		if t.Name() != leader {
			return false, nil
		}
	}
	return true, nil
}

// sameProcClock fails when pid lives in another time namespace than the
// caller, whose /proc start times are then shifted by a different boottime
// offset. Where the kernel has no time namespaces (before 5.6) there is one
// clock. Where the other process's namespace may not be inspected (another
// user's process: reading ns links needs ptrace access) the values are
// compared anyway, as the TypeScript peers always do; that is the one case
// where a process in a time namespace of its own could be misjudged.
func sameProcClock(pid int) error {
	ours, err := nsInode("/proc/self/ns/time")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	path, err := procPath(pid, "ns/time")
	if err != nil {
		return err
	}
	theirs, err := nsInode(path)
	if errors.Is(err, fs.ErrPermission) {
		return nil
	}
	if err != nil {
		return err
	}
	if theirs != ours {
		return errOtherTimeNS
	}
	return nil
}

var errOtherTimeNS = errors.New("liveness: process runs in another time namespace; its /proc start time is not comparable")

func nsInode(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Ino == 0 {
		return 0, fmt.Errorf("liveness: %s: no inode", path)
	}
	return st.Ino, nil
}
