package liveness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

func init() { helpers["reuse"] = helperReuse }

// reuseReport is what the helper inside the pid namespace prints.
type reuseReport struct {
	Pidfs bool
	// Forced reuse: B got A's pid at least one clock tick after A started.
	PidA, PidB         int
	StartA, StartB     string
	InoA, InoB         uint64
	Full               Judgement // A's record as written
	StartOnly          Judgement // A's record without its pidfd inode
	SameStart          Judgement // A's record with B's start time
	Control            Judgement // B's own record
	ControlNoPidfd     Judgement // B's record without the inode
	Natural            []Judgement
	NaturalSameStart   int // natural reuses where B got A's start time
	NaturalSameVerdict []Judgement
}

// spawnAt starts a sleeper child that gets pid exactly, by setting the
// namespace's last allocated pid just below it. A runtime thread created in
// between can steal the pid; the caller then tries another one.
func spawnAt(pid int) (*exec.Cmd, error) {
	if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=sleep")
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	if cmd.Process.Pid != pid {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, errPidTaken
	}
	return cmd, nil
}

var errPidTaken = fmt.Errorf("pid taken by another process")

func evidenceOf(pid int) (Owner, error) {
	st, format, err := StartTime(pid)
	if err != nil {
		return Owner{}, err
	}
	ino, err := PidfdIno(pid)
	if err != nil {
		return Owner{}, err
	}
	boot, err := BootID()
	if err != nil {
		return Owner{}, err
	}
	ns, err := PidNS(pid)
	if err != nil {
		return Owner{}, err
	}
	return Owner{Pid: pid, StartTime: st, StartTimeFormat: format, HostID: testHost.ID, BootID: boot, PidfdIno: ino, PidNS: ns}, nil
}

// reuse records A at some pid, kills and reaps it, and starts B at the
// same pid after the given pause. It returns A's record and B (running).
func reuse(next *int, pause time.Duration) (Owner, *exec.Cmd, error) {
	for tries := 0; tries < 50; tries++ {
		*next += 3
		a, err := spawnAt(*next)
		if err == errPidTaken {
			continue
		}
		if err != nil {
			return Owner{}, nil, err
		}
		recA, err := evidenceOf(a.Process.Pid)
		a.Process.Kill()
		a.Wait()
		if err != nil {
			return Owner{}, nil, err
		}
		time.Sleep(pause)
		b, err := spawnAt(recA.Pid)
		if err == errPidTaken {
			continue
		}
		if err != nil {
			return Owner{}, nil, err
		}
		return recA, b, nil
	}
	return Owner{}, nil, fmt.Errorf("could not place two processes on one pid in 50 tries")
}

func helperReuse() int {
	if err := runReuse(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func runReuse() error {
	if os.Getpid() != 1 {
		return fmt.Errorf("reuse helper must be pid 1 of a new pid namespace, is %d", os.Getpid())
	}
	var r reuseReport
	r.Pidfs = pidfsOK()
	j := Judge{Host: testHost}
	next := 300

	// Forced reuse, B started at least 5 ticks after A.
	recA, b, err := reuse(&next, 50*time.Millisecond)
	if err != nil {
		return err
	}
	recB, err := evidenceOf(b.Process.Pid)
	if err != nil {
		return err
	}
	r.PidA, r.PidB, r.StartA, r.StartB, r.InoA, r.InoB = recA.Pid, recB.Pid, recA.StartTime, recB.StartTime, recA.PidfdIno, recB.PidfdIno
	r.Full = j.Judge(recA)
	startOnly := recA
	startOnly.PidfdIno = 0
	r.StartOnly = j.Judge(startOnly)
	sameStart := recA
	sameStart.StartTime = recB.StartTime
	r.SameStart = j.Judge(sameStart)
	r.Control = j.Judge(recB)
	controlNoPidfd := recB
	controlNoPidfd.PidfdIno = 0
	r.ControlNoPidfd = j.Judge(controlNoPidfd)
	b.Process.Kill()
	b.Wait()

	// Natural fast reuse: no pause, so B usually starts in A's clock tick.
	for i := 0; i < 20; i++ {
		recA, b, err := reuse(&next, 0)
		if err != nil {
			return err
		}
		v := j.Judge(recA)
		r.Natural = append(r.Natural, v)
		if st, _, err := StartTime(b.Process.Pid); err == nil && st == recA.StartTime {
			r.NaturalSameStart++
			r.NaturalSameVerdict = append(r.NaturalSameVerdict, v)
		}
		b.Process.Kill()
		b.Wait()
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

func pidfsOK() bool {
	ino, err := PidfdIno(os.Getpid())
	return err == nil && ino != 0
}

// TestPidReuseIsDead forces a pid to be reused inside a fresh pid namespace
// and checks that the dead owner's record is judged dead, both when the new
// process's start time differs and when it is the same.
func TestPidReuseIsDead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: a new pid namespace and writes to ns_last_pid")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1) from util-linux")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--pid", "--fork", "--mount-proc", exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=reuse")
	out, err := cmd.Output()
	if err != nil {
		if s := stderrOf(err); strings.Contains(s, "Operation not permitted") || strings.Contains(s, "unshare failed") {
			t.Skipf("cannot create a pid namespace here: %s", s)
		}
		t.Fatalf("reuse helper: %v\n%s", err, stderrOf(err))
	}
	var r reuseReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("reuse helper printed %q: %v", out, err)
	}
	t.Logf("forced reuse: pid %d, start %s -> %s, pidfd inode %d -> %d", r.PidA, r.StartA, r.StartB, r.InoA, r.InoB)
	if r.PidA != r.PidB || r.StartA == r.StartB {
		t.Fatalf("the helper did not produce a reuse with a later start time: %+v", r)
	}
	if r.Control.Verdict != Alive || r.ControlNoPidfd.Verdict != Alive {
		t.Fatalf("the new process's own record: %v / %v, want alive", r.Control, r.ControlNoPidfd)
	}
	if r.Full.Verdict != Dead {
		t.Errorf("dead owner's record: %v, want dead", r.Full)
	}
	if r.StartOnly.Verdict != Dead || !strings.Contains(r.StartOnly.Reason, "start time differs") {
		t.Errorf("dead owner's record judged by start time: %v, want dead (start time differs)", r.StartOnly)
	}
	var sameStartDead int
	for _, v := range r.NaturalSameVerdict {
		if v.Verdict == Dead {
			sameStartDead++
		}
	}
	t.Logf("natural fast reuse: %d of %d new processes got the dead one's start time", r.NaturalSameStart, len(r.Natural))
	if !r.Pidfs {
		t.Skip("pidfds are not on pidfs (Linux < 6.9): a reuse with the same start time is undetectable here")
	}
	if r.InoA == 0 || r.InoA == r.InoB {
		t.Fatalf("pidfd inodes %d and %d do not tell the processes apart", r.InoA, r.InoB)
	}
	if r.SameStart.Verdict != Dead || !strings.Contains(r.SameStart.Reason, "pidfd inode differs") {
		t.Errorf("dead owner's record carrying the new process's start time: %v, want dead (pidfd inode differs)", r.SameStart)
	}
	for i, v := range r.Natural {
		if v.Verdict != Dead {
			t.Errorf("natural reuse %d: %v, want dead", i, v)
		}
	}
	if sameStartDead != r.NaturalSameStart {
		t.Errorf("natural reuses with equal start times: %d judged dead of %d", sameStartDead, r.NaturalSameStart)
	}
}
