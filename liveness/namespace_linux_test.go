package liveness

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/testfs"
)

func init() {
	helpers["evidence"] = helperEvidence
	helpers["foreignproc"] = helperForeignProc
	helpers["evidence-hold"] = helperEvidenceHold
}

// helperEvidenceHold prints Self() as one JSON line and stays alive until
// its standard input is closed.
func helperEvidenceHold() int {
	if rc := helperEvidence(); rc != 0 {
		return rc
	}
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// helperEvidence prints Self() as JSON: the record a process would write.
func helperEvidence() int {
	e, err := Self()
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	json.NewEncoder(os.Stdout).Encode(e)
	return 0
}

// evidenceUnder runs the evidence helper under unshare(1) with args, and
// returns what it recorded about itself. With a shell script, the helper is
// "$0".
func evidenceUnder(t *testing.T, shell string, unshareArgs ...string) Evidence {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create namespaces")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1) from util-linux")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append(unshareArgs, exe, "-test.run=^$")
	if shell != "" {
		args = append(unshareArgs, "sh", "-c", shell, exe)
	}
	cmd := exec.CommandContext(ctx, unshare, args...)
	cmd.Env = append(os.Environ(), helperEnv+"=evidence")
	out, err := cmd.Output()
	if err != nil {
		if s := stderrOf(err); strings.Contains(s, "Operation not permitted") || strings.Contains(s, "Permission denied") {
			t.Skipf("cannot create namespaces here: %s", s)
		}
		t.Fatalf("unshare %v: %v\n%s", args, err, stderrOf(err))
	}
	var e Evidence
	if err := json.Unmarshal(out, &e); err != nil {
		t.Fatalf("helper printed %q: %v", out, err)
	}
	return e
}

// TestVerdictRecordFromEarlierBoot: a process that saw another boot id (a
// fake boot_id bind-mounted in a private mount namespace, as after a
// reboot) wrote a record; its pid is live here, yet the record is dead.
func TestVerdictRecordFromEarlierBoot(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "boot_id")
	const fakeID = "11111111-2222-4333-8444-555555555555"
	if err := os.WriteFile(fake, []byte(fakeID+"\n"), 0o444); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BOOT_ID_FILE", fake)
	e := evidenceUnder(t, `mount --bind "$BOOT_ID_FILE" /proc/sys/kernel/random/boot_id && exec "$0" -test.run='^$'`,
		"--mount", "--propagation", "private")
	if e.BootID != fakeID {
		t.Fatalf("the helper recorded boot id %q, want the bind-mounted %q", e.BootID, fakeID)
	}
	// The record names a live pid with its true start time: only the boot
	// id can prove it dead.
	o := ownerOf(t, startSleeper(t).Process.Pid)
	o.BootID = e.BootID
	expect(t, judge(o), Dead, "boot differs")
	if cur, _ := BootID(); cur == fakeID {
		t.Fatal("the bind mount leaked out of the private mount namespace")
	}
}

// TestVerdictRecordFromOtherPidNamespace: a process in a container (a new
// pid namespace) wrote a record naming itself as pid 1. Pid 1 is alive
// here too, and its own pid may be free here: neither says anything about
// the container's process.
func TestVerdictRecordFromOtherPidNamespace(t *testing.T) {
	e := evidenceUnder(t, "", "--pid", "--fork", "--mount-proc")
	if e.Pid != 1 || e.PidNS == 0 {
		t.Fatalf("helper evidence %+v: want pid 1 with a pid namespace", e)
	}
	ours, err := PidNS(os.Getpid())
	if err != nil || ours == e.PidNS {
		t.Fatalf("our pid namespace %d (%v) equals the helper's %d", ours, err, e.PidNS)
	}
	expect(t, judge(e.Owner(testHost.ID)), Unknown, "other pid namespace")
	// The same record without its namespace (as a TypeScript peer writes
	// it) is judged by our pid 1, whose start time differs: this is the
	// ambiguity the pid_ns field exists to remove.
	legacy := e.Owner(testHost.ID)
	legacy.PidNS = 0
	if got := judge(legacy); got.Verdict == Unknown {
		t.Fatalf("without pid_ns the record was %v; the test premise does not hold", got)
	}
}

type foreignProcReport struct {
	Pid           int
	ProcIsOurs    bool
	Self          Evidence
	SelfStatStart string // field 22 of /proc/self/stat, read naively
	SelfNSLink    string // readlink /proc/self/ns/pid
	ChildPid      int
	ChildStartErr string
	Reused        Judgement // the child's record with a wrong start time
}

// helperForeignProc runs as pid 1 of a new pid namespace that kept the
// parent's /proc, where /proc/<n> is not our pid n.
func helperForeignProc() int {
	var r foreignProcReport
	r.Pid = os.Getpid()
	r.ProcIsOurs = procIsOurs()
	var err error
	if r.Self, err = Self(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 21 {
			r.SelfStatStart = f[21]
		}
	}
	r.SelfNSLink, _ = os.Readlink("/proc/self/ns/pid")
	exe, _ := os.Executable()
	child := exec.Command(exe, "-test.run=^$")
	child.Env = append(os.Environ(), helperEnv+"=sleep")
	if err := child.Start(); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 1
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	r.ChildPid = child.Process.Pid
	if _, _, err := StartTime(r.ChildPid); err != nil {
		r.ChildStartErr = err.Error()
	}
	j := Judge{Host: testHost}
	r.Reused = j.Judge(Owner{Pid: r.ChildPid, StartTime: "1", StartTimeFormat: FormatLinuxProc, HostID: testHost.ID})
	json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

// TestForeignProcIsNotTrusted: in a pid namespace that kept its parent's
// /proc, /proc/<pid> describes some other process. Start times read there
// would prove "reuse" of every live owner; they must not be read at all,
// while the caller's own evidence (through /proc/self) stays right.
func TestForeignProcIsNotTrusted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a pid namespace")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1) from util-linux")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "--pid", "--fork", exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=foreignproc")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, stderrOf(err))
	}
	var r foreignProcReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("helper printed %q: %v", out, err)
	}
	if r.Pid != 1 || r.ProcIsOurs {
		t.Fatalf("premise: helper pid %d, /proc ours %v; want pid 1 with the parent's /proc", r.Pid, r.ProcIsOurs)
	}
	if r.Self.StartTime != r.SelfStatStart || r.Self.StartTimeFormat != FormatLinuxProc {
		t.Errorf("own start time %q (%s), /proc/self/stat says %q", r.Self.StartTime, r.Self.StartTimeFormat, r.SelfStatStart)
	}
	if want := "pid:[" + strconv.FormatUint(r.Self.PidNS, 10) + "]"; r.SelfNSLink != want {
		t.Errorf("own pid namespace %d, /proc/self/ns/pid is %q", r.Self.PidNS, r.SelfNSLink)
	}
	if r.ChildStartErr == "" {
		t.Errorf("the start time of child %d was read from a /proc of another namespace", r.ChildPid)
	}
	if r.Reused.Verdict == Dead {
		t.Errorf("a live child was judged %v through a foreign /proc", r.Reused)
	}
}

// TestVerdictOwnerInTimeNamespace: a live owner in a time namespace with a
// boottime offset records the start time it reads in /proc, which differs
// from what this namespace reads for the same process. It must stay alive.
func TestVerdictOwnerInTimeNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a time namespace")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("needs unshare(1) from util-linux")
	}
	if _, err := os.Stat("/proc/self/ns/time"); err != nil {
		t.Skip("no time namespaces in this kernel")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(unshare, "--time", "--boottime", "100000", "--fork", exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=evidence-hold")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	var e Evidence
	if err := json.NewDecoder(stdout).Decode(&e); err != nil {
		stdin.Close()
		cmd.Wait()
		if strings.Contains(stderr.String(), "Operation not permitted") {
			t.Skipf("cannot create a time namespace here: %s", stderr.String())
		}
		t.Fatalf("helper: %v\n%s", err, stderr.String())
	}
	here, _, err := StartTime(e.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if here == e.StartTime {
		t.Fatalf("premise: the owner recorded start time %s, the same as read here", here)
	}
	o := e.Owner(testHost.ID)
	expect(t, judge(o), Alive, "")
	noPidfd := o
	noPidfd.PidfdIno = 0
	expect(t, judge(noPidfd), Alive, "start time unreadable")
}

// TestVerdictReferenceRecordFromNestedPidNamespace: a process of a nested
// pid namespace (a container sharing the directory and the host identity)
// wrote a record without pid_ns, as the TypeScript reference writes every
// record, and holds it. Its pid there is free here: judged by that pid
// alone (ESRCH) the record is dead and its live lock would be taken. The
// judge finds the writer through NSpid and its start time, and keeps the
// record (Unknown) while it lives; once it has exited, the record is dead.
func TestVerdictReferenceRecordFromNestedPidNamespace(t *testing.T) {
	testfs.RequireRoot(t)
	unshare := testfs.RequireCommand(t, "unshare")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		// The helper is the namespace's pid free: sh is its pid 1 and
		// sleeps take 2 .. free-1.
		free := 0
		for p := 5; p < 400 && free == 0; p++ {
			if _, err := os.Stat("/proc/" + strconv.Itoa(p)); os.IsNotExist(err) {
				free = p
			}
		}
		if free == 0 {
			t.Skip("every pid from 5 to 400 is in use here")
		}
		script := `i=2; while [ $i -lt ` + strconv.Itoa(free) + ` ]; do sleep 60 & i=$((i+1)); done; "$0" -test.run='^$'`
		cmd := exec.Command(unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script, exe)
		cmd.Env = append(os.Environ(), helperEnv+"=evidence-hold")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var e Evidence
		if err := json.NewDecoder(stdout).Decode(&e); err != nil {
			stdin.Close()
			cmd.Wait()
			t.Fatalf("helper: %v\n%s", err, stderr.String())
		}
		if e.Pid != free || e.StartTimeFormat != FormatLinuxProc {
			stdin.Close()
			cmd.Wait()
			t.Fatalf("helper evidence %+v: want pid %d with a linux-proc start time", e, free)
		}
		if err := (System{}).Signal(free); err == nil || !strings.Contains(err.Error(), "no such process") {
			// A process of ours took the pid meanwhile: the premise
			// (ESRCH here) is lost; try again.
			stdin.Close()
			cmd.Wait()
			if attempt == 3 {
				t.Fatalf("pid %d was taken here in each of 4 attempts", free)
			}
			continue
		}
		ref := e.Owner(testHost.ID)
		ref.PidNS, ref.PidfdIno, ref.StartTimeFormat = 0, 0, "" // as the reference writes it
		expect(t, judge(ref), Unknown, "nested pid namespace")
		// A waiter asks at every attempt: the owner found is looked at
		// again alone, /proc is not walked again.
		scans := nestedScans.Load()
		for range 20 {
			expect(t, judge(ref), Unknown, "nested pid namespace")
		}
		if n := nestedScans.Load() - scans; n != 0 {
			t.Errorf("20 more judgements of the same live record walked /proc %d times, want 0", n)
		}
		older := e.Owner(testHost.ID) // an exactfs record from before pid_ns
		older.PidNS, older.PidfdIno = 0, 0
		expect(t, judge(older), Unknown, "nested pid namespace")

		// Not any process known there by that pid keeps the record: its
		// start time must match.
		other := ref
		other.StartTime = "1"
		expect(t, judge(other), Dead, "ESRCH")

		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper: %v\n%s", err, stderr.String())
		}
		expect(t, judge(ref), Dead, "ESRCH")
		return
	}
}
