package liveness

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// procFields returns the whitespace-separated fields of /proc/<pid>/stat,
// read the naive way: an independent reading for processes whose command
// name has no spaces or parentheses.
func procFields(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if strings.ContainsAny(f[1][1:len(f[1])-1], "() ") {
		t.Fatalf("command name %s is not plain; the naive reading does not apply", f[1])
	}
	return f
}

// waitForState polls until /proc/<pid>/stat shows the given state.
func waitForState(t *testing.T, pid int, state string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for procFields(t, pid)[2] != state {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d never reached state %s", pid, state)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestStartTimeOfSelfIsProcField22(t *testing.T) {
	v, format, err := StartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if format != FormatLinuxProc {
		t.Fatalf("format = %q, want %q", format, FormatLinuxProc)
	}
	if want := procFields(t, os.Getpid())[21]; v != want {
		t.Fatalf("StartTime = %q, field 22 of /proc/self/stat = %q", v, want)
	}
	e, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	if e.Pid != os.Getpid() || e.StartTime != v || e.StartTimeFormat != FormatLinuxProc {
		t.Fatalf("Self() = %+v, want pid %d start %s", e, os.Getpid(), v)
	}
}

// TestStartTimeWithHostileCommandName runs a process whose command name
// contains spaces and parentheses, and checks the start time against the
// field counted from the END of the line, which does not depend on parsing
// the command name at all.
func TestStartTimeWithHostileCommandName(t *testing.T) {
	sleepBin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	body, err := os.ReadFile(sleepBin)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), ") (x) 1 2 ")
	if err := os.WriteFile(name, body, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot run a copy of sleep: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	// The number of fields after the command name, from a plain line.
	plain := procFields(t, os.Getpid())
	fromEnd := len(plain) - 21
	var line string
	for deadline := time.Now().Add(5 * time.Second); ; {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Fatal(err)
		}
		line = string(b)
		if strings.Contains(line, "(x)") || time.Now().After(deadline) {
			break // exec has happened
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !strings.Contains(line, ") (x) 1 2 ") {
		t.Fatalf("command name was not taken over: %q", line)
	}
	all := strings.Fields(line)
	want := all[len(all)-fromEnd]
	got, format, err := StartTime(pid)
	if err != nil || format != FormatLinuxProc || got != want {
		t.Fatalf("StartTime = %q, %q, %v; want %q from %q", got, format, err, want, line)
	}
}

func TestStartTimeOfExitedProcess(t *testing.T) {
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	cmd.Process.Kill()
	cmd.Wait()
	if v, f, err := StartTime(pid); err == nil {
		t.Fatalf("StartTime of a reaped pid = %q, %q", v, f)
	}
}

var lstartPattern = regexp.MustCompile(`\A[A-Z][a-z]{2} [A-Z][a-z]{2} [ 1-3][0-9] [0-2][0-9]:[0-5][0-9]:[0-6][0-9] [0-9]{4}\z`)

func TestPsStartTime(t *testing.T) {
	if _, err := exec.LookPath("ps"); err != nil {
		t.Skip("no ps")
	}
	cmd := startSleeper(t)
	v, err := StartTimeAs(cmd.Process.Pid, FormatPsUTC)
	if err != nil {
		t.Fatal(err)
	}
	if !lstartPattern.MatchString(v) {
		t.Fatalf("ps start time %q is not C-locale lstart text", v)
	}
	// The text is UTC whatever the caller's zone, so peers agree.
	t.Setenv("TZ", "Asia/Kathmandu")
	t.Setenv("LC_ALL", "de_DE.UTF-8")
	v2, err := StartTimeAs(cmd.Process.Pid, FormatPsUTC)
	if err != nil || v2 != v {
		t.Fatalf("under another TZ/locale: %q, %v; want %q", v2, err, v)
	}
	started, err := time.Parse("Mon Jan _2 15:04:05 2006", v)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(started); d < -2*time.Second || d > time.Minute {
		t.Fatalf("ps start time %s is %v away from now (UTC)", v, d)
	}
}

func TestBootID(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Skip(err)
	}
	id, err := BootID()
	if err != nil || id != strings.TrimSpace(string(b)) {
		t.Fatalf("BootID() = %q, %v; file says %q", id, err, b)
	}
	if e, _ := Self(); e.BootID != id {
		t.Fatalf("Self().BootID = %q", e.BootID)
	}
}

func TestPidNS(t *testing.T) {
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skip(err)
	}
	want, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "pid:["), "]"), 10, 64)
	if err != nil {
		t.Fatalf("unexpected link %q", link)
	}
	got, err := PidNS(os.Getpid())
	if err != nil || got != want {
		t.Fatalf("PidNS(self) = %d, %v; link says %d", got, err, want)
	}
	if e, _ := Self(); e.PidNS != want {
		t.Fatalf("Self().PidNS = %d", e.PidNS)
	}
	if ns, err := (System{}).PidNS(); err != nil || ns != want {
		t.Fatalf("System.PidNS() = %d, %v", ns, err)
	}
}

// pidfsSupported says whether pidfds live on pidfs here, asked the
// kernel's way: the filesystem magic of a pidfd's mount, in a build that
// uses pidfds at all.
func pidfsSupported(t *testing.T) bool {
	if !pidfdBuilt {
		return false // the portable build has no pidfds, whatever the kernel has
	}
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var s unix.Statfs_t
	return unix.Fstatfs(fd, &s) == nil && uint64(s.Type) == unix.PID_FS_MAGIC
}

func TestPidfdIno(t *testing.T) {
	if !pidfsSupported(t) {
		ino, err := PidfdIno(os.Getpid())
		if ino != 0 || err != nil {
			t.Fatalf("without pidfs PidfdIno = %d, %v; want 0, nil", ino, err)
		}
		t.Skip("pidfds are not on pidfs (Linux < 6.9): inode evidence unavailable")
	}
	a, b := startSleeper(t), startSleeper(t)
	inoA, err := PidfdIno(a.Process.Pid)
	if err != nil || inoA == 0 {
		t.Fatalf("PidfdIno(a) = %d, %v", inoA, err)
	}
	inoB, err := PidfdIno(b.Process.Pid)
	if err != nil || inoB == 0 {
		t.Fatalf("PidfdIno(b) = %d, %v", inoB, err)
	}
	if inoA == inoB {
		t.Fatalf("two processes share pidfd inode %d", inoA)
	}
	if again, _ := PidfdIno(a.Process.Pid); again != inoA {
		t.Fatalf("pidfd inode of one process changed: %d then %d", inoA, again)
	}
	if e, _ := Self(); e.PidfdIno == 0 || e.PidfdIno == inoA || e.PidfdIno == inoB {
		t.Fatalf("Self().PidfdIno = %d (a %d, b %d)", e.PidfdIno, inoA, inoB)
	}
	pid := a.Process.Pid
	a.Process.Kill()
	a.Wait()
	if ino, err := PidfdIno(pid); !errors.Is(err, unix.ESRCH) {
		t.Fatalf("PidfdIno of a reaped pid = %d, %v; want ESRCH", ino, err)
	}
}

func TestZombieProbe(t *testing.T) {
	cmd := startSleeper(t)
	pid := cmd.Process.Pid
	if z, err := zombie(pid); err != nil || z {
		t.Fatalf("zombie(live) = %v, %v", z, err)
	}
	cmd.Process.Kill()
	waitForState(t, pid, "Z")
	if z, err := zombie(pid); err != nil || !z {
		t.Fatalf("zombie(zombie) = %v, %v", z, err)
	}
	cmd.Wait()
	if _, err := zombie(pid); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("zombie(reaped) err = %v", err)
	}
}
