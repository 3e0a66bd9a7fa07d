package liveness

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func init() { helpers["judge"] = helperJudge }

// helperJudge judges the Owner given as JSON in LIVENESS_OWNER with the
// real system probes and prints the Judgement as JSON.
func helperJudge() int {
	var o Owner
	if err := json.Unmarshal([]byte(os.Getenv("LIVENESS_OWNER")), &o); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		return 2
	}
	j := Judge{Host: testHost}
	json.NewEncoder(os.Stdout).Encode(j.Judge(o))
	return 0
}

// judgeAsNobody judges o from a process running as another user, for whom
// kill(pid, 0) on our children really answers EPERM.
func judgeAsNobody(t *testing.T, exe string, o Owner) Judgement {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=judge", "LIVENESS_OWNER="+string(b))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("judge as nobody: %v\n%s", err, stderrOf(err))
	}
	var got Judgement
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("judge printed %q: %v", out, err)
	}
	return got
}

// TestVerdictRealEPERM: seen from another user, a live owner answers EPERM
// and stays alive, while a record whose pid now names somebody else's
// process is still proved dead by its identity (the start time and pidfd
// inode need no permission to signal).
func TestVerdictRealEPERM(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a judge as another user")
	}
	// The test binary sits in a private build directory; copy it where
	// the other user can run it.
	dir, err := os.MkdirTemp("", "liveness-eperm-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "liveness.test")
	copyFile(t, self, exe, 0o755)

	o := ownerOf(t, startSleeper(t).Process.Pid)
	if err := probeAsNobody(exe); err != nil {
		t.Skipf("cannot run as uid 65534 here: %v", err)
	}
	expect(t, judgeAsNobody(t, exe, o), Alive, "EPERM")

	reusedStart := o
	reusedStart.StartTime += "0"
	reusedStart.PidfdIno = 0
	expect(t, judgeAsNobody(t, exe, reusedStart), Dead, "start time differs")
	if o.PidfdIno != 0 {
		reusedIno := o
		reusedIno.PidfdIno++
		expect(t, judgeAsNobody(t, exe, reusedIno), Dead, "pidfd inode differs")
	}
}

// probeAsNobody checks that the other user can run the helper at all.
func probeAsNobody(exe string) error {
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=judge", `LIVENESS_OWNER={"Pid":1}`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		return &exec.Error{Name: strings.TrimSpace(string(out)), Err: err}
	}
	return nil
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
