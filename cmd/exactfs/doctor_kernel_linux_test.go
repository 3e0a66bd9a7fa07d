//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
)

// doctorLine returns the probe line of doctor's output whose name is name,
// or fails the test.
func doctorLine(t *testing.T, out, name string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  "+name+" ") {
			return l
		}
	}
	t.Fatalf("doctor prints no %q line:\n%s", name, out)
	return ""
}

// TestDoctorSaysHowWaitingAndCrashJudgementWork: doctor says which waker a
// lock waiter uses, whether the lease probe answers on DIR's filesystem
// and whether OFD locks work there, and what that means: a crashed holder
// judged by the kernel or by pid rules only, crash residue removed or kept
// because the kernel cannot tell. On this Linux every answer is yes; in the
// portable build (GOFLAGS=-tags=exactfs_portable, which the binary under
// test is built with too) every answer is no and doctor says what it keeps.
// Before ProbeKernel doctor printed no open-file or waiter line at all.
func TestDoctorSaysHowWaitingAndCrashJudgementWork(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, 30*time.Second, "", "doctor", dir)
	expectCode(t, r, 0, "doctor")
	ofd, lease := kernelTells(t)
	wantLine := func(name string, yes bool, detail string) {
		t.Helper()
		l := doctorLine(t, r.stdout, name)
		mark := map[bool]string{true: " yes  ", false: " no   "}[yes]
		if !strings.Contains(l, mark) || !strings.Contains(l, detail) {
			t.Errorf("want %q to say %q and %q", l, strings.TrimSpace(mark), detail)
		}
	}
	has := func(want ...string) {
		t.Helper()
		flat := strings.Join(strings.Fields(r.stdout), " ")
		for _, w := range want {
			if !strings.Contains(flat, w) {
				t.Errorf("doctor does not say %q:\n%s", w, r.stdout)
			}
		}
	}
	if sys.Portable {
		if ofd || lease {
			t.Fatalf("the portable build's kernel answers ofd=%v lease=%v", ofd, lease)
		}
		wantLine("OFD locks", false, "")
		wantLine("open-file probe", false, "the kernel cannot tell whether a file is open")
		wantLine("waiter wake-up", false, "timed backoff: no inotify or kqueue waker in this build")
		has("judged by pid, start time and boot id only",
			"crashed writer's staging files are kept, never removed on a guess",
			`"the kernel cannot tell whether it is open"`,
			"also keeps crashed claims and malformed records (keep-claim, keep-lock)",
			"a lock waiter sleeps on a timed backoff (5 ms doubling to 100 ms",
			"built with the exactfs_portable tag")
	} else {
		if !ofd || !lease {
			t.Fatalf("this Linux's kernel answers ofd=%v lease=%v in %s; the test expects both", ofd, lease, dir)
		}
		wantLine("OFD locks", true, "F_OFD_SETLK")
		wantLine("open-file probe", true, "F_SETLEASE")
		wantLine("waiter wake-up", true, "inotify: inotify_init1 works, and a file created here woke the watch at once")
		has("judged dead at once by the kernel",
			"kernel-attested ownership",
			"proven abandoned and removed by the next holder's sweep or `exactfs recover`",
			"sleeps until the lock's record changes (inotify wakes it at once")
		if strings.Contains(r.stdout, "exactfs_portable") {
			t.Errorf("a normal build calls itself portable:\n%s", r.stdout)
		}
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("doctor left %v in %s", names, dir)
	}
}

// TestDoctorWithoutInotify: where inotify_init1 fails, doctor says waiters
// fall back to a timed backoff and how to get inotify back. The failure is
// real: doctor runs in a user namespace of its own whose inotify instance
// limit (/proc/sys/user/max_inotify_instances, a per-namespace value) is 0,
// so inotify_init1 answers EMFILE exactly as on a host whose
// fs.inotify.max_user_instances is spent. (Not fs/inotify/max_user_instances:
// that file is the initial namespace's limit even when written from inside
// a child namespace, so writing it would change the host's.) The other
// answers stay yes: only the waker degrades.
func TestDoctorWithoutInotify(t *testing.T) {
	testfs.RequireCommand(t, "unshare")
	out, err := exec.Command("unshare", "--user", "--map-root-user", "sh", "-c", "echo 0 > /proc/sys/user/max_inotify_instances").CombinedOutput()
	testfs.Require(t, "a user namespace with its own inotify limit (unshare --user --map-root-user)", err == nil, strings.TrimSpace(string(out))+" "+errText(err))
	hostLimit := readLimit(t)
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "cfg")
	if err := os.Mkdir(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--user", "--map-root-user", "sh", "-c",
		`echo 0 > /proc/sys/user/max_inotify_instances && exec "$0" doctor --config-root "$1" "$2"`, exactfsBin, cfg, dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("doctor in a user namespace without inotify: %v\nstdout: %s\nstderr: %s", err, b, stderr.String())
	}
	out = b
	l := doctorLine(t, string(out), "waiter wake-up")
	if sys.Portable {
		// No inotify to fail: the waker was a timed backoff already.
		if !strings.Contains(l, " no   timed backoff: no inotify or kqueue waker in this build") {
			t.Errorf("portable build: want no waker, got %q", l)
		}
	} else {
		if !strings.Contains(l, " no   timed backoff: inotify_init1 failed: EMFILE") {
			t.Errorf("want the waker reported as a timed backoff after EMFILE, got %q", l)
		}
		flat := strings.Join(strings.Fields(string(out)), " ")
		for _, w := range []string{
			"waiting: inotify is unavailable (inotify_init1 failed: EMFILE",
			"sleeps on a timed backoff (5 ms doubling to 100 ms",
			"fs.inotify.max_user_instances",
			"/proc/sys/user/max_inotify_instances",
			"sysctl -w fs.inotify.max_user_instances=1024",
			"find /proc/*/fd -lname anon_inode:inotify",
		} {
			if !strings.Contains(flat, w) {
				t.Errorf("doctor without inotify does not say %q:\n%s", w, out)
			}
		}
		for _, name := range []string{"OFD locks", "open-file probe"} {
			if l := doctorLine(t, string(out), name); !strings.Contains(l, " yes  ") {
				t.Errorf("without inotify %q should still be yes: %q", name, l)
			}
		}
	}
	if names := dirNames(t, dir); len(names) != 0 {
		t.Fatalf("doctor left %v in %s", names, dir)
	}
	if got := readLimit(t); got != hostLimit {
		t.Fatalf("the host's fs.inotify.max_user_instances changed from %q to %q", hostLimit, got)
	}
}

func readLimit(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_instances")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
