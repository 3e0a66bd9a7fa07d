package liveness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var testHost = HostIdentity{ID: "this-host-" + strings.Repeat("a", 54), LegacyID: "legacy-" + strings.Repeat("b", 57)}

// ownerOf reads the evidence of a live process the way a record writer
// would, and names this test host.
func ownerOf(t *testing.T, pid int) Owner {
	t.Helper()
	st, format, err := StartTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	ino, err := PidfdIno(pid)
	if err != nil {
		t.Fatal(err)
	}
	boot, err := BootID()
	if err != nil {
		t.Fatal(err)
	}
	ns, err := PidNS(pid)
	if err != nil {
		t.Fatal(err)
	}
	return Owner{Pid: pid, StartTime: st, StartTimeFormat: format, HostID: testHost.ID,
		BootID: boot, PidfdIno: ino, PidNS: ns}
}

func judge(o Owner) Judgement {
	j := Judge{Host: testHost}
	return j.Judge(o)
}

func expect(t *testing.T, got Judgement, want Verdict, reason string) {
	t.Helper()
	if got.Verdict != want || !strings.Contains(got.Reason, reason) {
		t.Fatalf("verdict %v, want %v (%s)", got, want, reason)
	}
}

// deadOwner returns the record of a child that was killed and reaped.
func deadOwner(t *testing.T) Owner {
	t.Helper()
	cmd := startSleeper(t)
	o := ownerOf(t, cmd.Process.Pid)
	cmd.Process.Kill()
	cmd.Wait()
	return o
}

func TestVerdictLiveChild(t *testing.T) {
	o := ownerOf(t, startSleeper(t).Process.Pid)
	expect(t, judge(o), Alive, "")
	noPidfd := o
	noPidfd.PidfdIno = 0
	expect(t, judge(noPidfd), Alive, "start time matches")
	o.HostID = testHost.LegacyID
	expect(t, judge(o), Alive, "")
}

func TestVerdictSelf(t *testing.T) {
	e, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	expect(t, judge(e.Owner(testHost.ID)), Alive, "")
}

func TestVerdictReapedChildIsDead(t *testing.T) {
	expect(t, judge(deadOwner(t)), Dead, "ESRCH")
}

func TestVerdictZombieIsDead(t *testing.T) {
	cmd := startSleeper(t)
	o := ownerOf(t, cmd.Process.Pid)
	cmd.Process.Kill()
	waitForState(t, o.Pid, "Z")
	// kill(pid, 0) still succeeds on the zombie, and its start time and
	// pidfd inode are still the recorded ones: only the state proves it.
	if err := syscall.Kill(o.Pid, 0); err != nil {
		t.Fatalf("kill(zombie, 0) = %v; the test premise does not hold", err)
	}
	expect(t, judge(o), Dead, "zombie")
	cmd.Wait()
	expect(t, judge(o), Dead, "ESRCH")
}

// TestVerdictExitedLeaderWithLiveThreadsIsAlive: a process whose main
// thread called pthread_exit shows state Z in /proc/<pid>/stat while its
// other threads run. It is alive and must not be judged a zombie.
func TestVerdictExitedLeaderWithLiveThreadsIsAlive(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is needed to make a leader thread exit alone")
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := `import ctypes, os, sys, threading, time
threading.Thread(target=lambda: time.sleep(60)).start()
fd = os.open(sys.argv[1] + ".tmp", os.O_WRONLY | os.O_CREAT, 0o600)
os.write(fd, str(os.getpid()).encode()); os.close(fd)
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
ctypes.CDLL(None).pthread_exit(None)
`
	cmd := exec.Command(py, "-c", script, pidFile)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("python helper did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	pid := cmd.Process.Pid
	o := ownerOf(t, pid)
	waitForState(t, pid, "Z")
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if len(tasks) < 2 {
		t.Skipf("the leader exited but no other thread is listed (%d tasks)", len(tasks))
	}
	expect(t, judge(o), Alive, "")
	// Now the whole process exits; unreaped, it is a zombie.
	cmd.Process.Kill()
	for deadline := time.Now().Add(10 * time.Second); ; {
		tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if len(tasks) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the threads of the killed helper never went away")
		}
		time.Sleep(5 * time.Millisecond)
	}
	expect(t, judge(o), Dead, "zombie")
}

func TestVerdictHostQualification(t *testing.T) {
	dead := deadOwner(t)
	live := ownerOf(t, startSleeper(t).Process.Pid)

	unqualified := dead
	unqualified.HostID = ""
	expect(t, judge(unqualified), Alive, "no host id")
	local := Judge{Host: testHost, HostLocal: true}
	expect(t, local.Judge(unqualified), Dead, "ESRCH")
	liveUnqualified := live
	liveUnqualified.HostID = ""
	expect(t, local.Judge(liveUnqualified), Alive, "")

	foreign := dead
	foreign.HostID = "another-host"
	expect(t, judge(foreign), Alive, "foreign host")
	expect(t, local.Judge(foreign), Alive, "foreign host")

	legacy := dead
	legacy.HostID = testHost.LegacyID
	expect(t, judge(legacy), Dead, "ESRCH")
}

// errnoProbe is the real system except that kill(pid, 0) answers errno.
type errnoProbe struct {
	System
	errno syscall.Errno
}

func (p errnoProbe) Signal(int) error { return os.NewSyscallError("kill", p.errno) }

func TestVerdictInjectedSignalErrors(t *testing.T) {
	dead := deadOwner(t)
	for errno, want := range map[syscall.Errno]Verdict{syscall.EPERM: Alive, syscall.EIO: Unknown, syscall.EINVAL: Unknown} {
		j := Judge{Host: testHost, Probe: errnoProbe{errno: errno}}
		if got := j.Judge(dead); got.Verdict != want {
			t.Errorf("kill answering %v: verdict %v, want %v", errno, got, want)
		}
	}
}

func TestVerdictOtherBootIsDead(t *testing.T) {
	o := ownerOf(t, startSleeper(t).Process.Pid)
	o.BootID = "00000000-0000-4000-8000-000000000000"
	expect(t, judge(o), Dead, "boot differs")
}

func TestVerdictOtherPidNamespaceIsUnknown(t *testing.T) {
	// A record from another namespace whose pid is free here: ESRCH in our
	// namespace must not count.
	o := deadOwner(t)
	o.PidNS++
	expect(t, judge(o), Unknown, "other pid namespace")
}

func TestVerdictStartTime(t *testing.T) {
	live := ownerOf(t, startSleeper(t).Process.Pid)
	live.PidfdIno = 0 // judge by the start time alone

	reused := live
	n, _ := strconv.ParseUint(live.StartTime, 10, 64)
	reused.StartTime = strconv.FormatUint(n-1, 10)
	expect(t, judge(reused), Dead, "start time differs")

	unknownStart := live
	unknownStart.StartTime, unknownStart.StartTimeFormat = UnknownStartTime, ""
	expect(t, judge(unknownStart), Alive, "start time unknown")

	noFormat := reused
	noFormat.StartTimeFormat = ""
	expect(t, judge(noFormat), Alive, "no format")

	if _, err := exec.LookPath("ps"); err == nil {
		ps, err := StartTimeAs(live.Pid, FormatPsUTC)
		if err != nil {
			t.Fatal(err)
		}
		psOwner := live
		psOwner.StartTime, psOwner.StartTimeFormat = ps, FormatPsUTC
		expect(t, judge(psOwner), Alive, "start time matches")
		psOwner.StartTime = "Thu Jan  1 00:00:00 1970"
		expect(t, judge(psOwner), Dead, "start time differs")
	}
}

func TestVerdictPidfdInodeDiffers(t *testing.T) {
	if !pidfsSupported(t) {
		t.Skip("pidfds are not on pidfs (Linux < 6.9)")
	}
	o := ownerOf(t, startSleeper(t).Process.Pid)
	o.PidfdIno++
	expect(t, judge(o), Dead, "pidfd inode differs")
}
