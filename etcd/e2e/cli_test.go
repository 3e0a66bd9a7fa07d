//go:build unix

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	cliOnce sync.Once
	cliDir  string // removed by TestMain when the tests end
	cliPath string
	cliErr  error
)

// cliBinary builds exactfs-etcd, and the core exactfs beside it (which
// hands etcd URLs over to it), once per test run.
func cliBinary(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "exactfs-etcd-e2e-")
		if err != nil {
			cliErr = err
			return
		}
		cliDir = dir
		cliPath = filepath.Join(dir, "exactfs-etcd")
		out, err := exec.Command("go", "build", "-o", dir, "github.com/exactfs/exactfs/etcd/cmd/exactfs-etcd", "github.com/exactfs/exactfs/cmd/exactfs").CombinedOutput()
		if err != nil {
			cliErr = errors.New(string(out))
		}
	})
	if cliErr != nil {
		t.Fatalf("building exactfs-etcd: %v", cliErr)
	}
	return cliPath
}

// coreBinary is the core exactfs command, built beside exactfs-etcd.
func coreBinary(t *testing.T) string {
	return filepath.Join(filepath.Dir(cliBinary(t)), "exactfs")
}

type cliResult struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

func runCLI(t *testing.T, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	return runBinary(t, cliBinary(t), env, stdin, args...)
}

func runBinary(t *testing.T, bin string, env []string, stdin string, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), "EXACTFS_ETCD_ENDPOINTS="), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("running exactfs-etcd: %v", err)
	}
	return r
}

func (r cliResult) want(t *testing.T, code int, stderrHas ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stderrHas {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr does not say %q:\n%s", s, r.stderr)
		}
	}
}

const incr = `awk '{ n = $1 } END { print n + 1 }'`

func TestCLIUpdateLockStatus(t *testing.T) {
	c := startCluster(t)
	url := "etcd://" + strings.Join(hostPorts(c.endpoints()), ",") + "/cli/counter"
	for i := 0; i < 3; i++ {
		runCLI(t, nil, "", "update", url, "--", "sh", "-c", incr).want(t, 0)
	}
	// etcd:///KEY with the endpoints in the environment.
	env := []string{"EXACTFS_ETCD_ENDPOINTS=" + strings.Join(c.endpoints(), ",")}
	runCLI(t, env, "", "update", "etcd:///cli/counter", "--", "sh", "-c", incr).want(t, 0)
	r := runCLI(t, env, "", "status", "--json", "etcd:///cli/counter")
	r.want(t, 0)
	var st statusJSONView
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Lock != "free" || st.StateRev == 0 {
		t.Fatalf("status --json: %q, %v; want free with a state revision", r.stdout, err)
	}
	gr, err := c.client(t).Get(t.Context(), "/cli/counter")
	if err != nil || len(gr.Kvs) != 1 || strings.TrimSpace(string(gr.Kvs[0].Value)) != "4" {
		t.Fatalf("counter: %v %v; want 4", gr, err)
	}

	// A failing CMD writes nothing and its status passes through.
	runCLI(t, nil, "", "update", url, "--", "sh", "-c", "echo garbage; exit 3").want(t, 3)
	if gr2, _ := c.client(t).Get(t.Context(), "/cli/counter"); gr2.Kvs[0].ModRevision != gr.Kvs[0].ModRevision {
		t.Errorf("a failed CMD changed the key")
	}

	// While one lock holds, status names it and --try fails with 75.
	holder := exec.Command(cliBinary(t), "lock", url, "--", "sh", "-c", `echo "token=$EXACTFS_LOCK_TOKEN"; sleep 30`)
	holder.Env = os.Environ()
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	line := make([]byte, 64)
	n, _ := out.Read(line)
	token := strings.TrimSpace(strings.TrimPrefix(string(line[:n]), "token="))
	if token == "" {
		t.Fatalf("lock printed %q, want its token", line[:n])
	}
	r = runCLI(t, nil, "", "status", url)
	r.want(t, 0)
	t.Logf("status of a held lock:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "held by pid") || !strings.Contains(r.stdout, "token "+token) || !strings.Contains(r.stdout, "TTL left") {
		t.Errorf("status of a held lock:\n%s\nwant holder, token %s and TTL", r.stdout, token)
	}
	r = runCLI(t, nil, "", "update", "--try", url, "--", "cat")
	r.want(t, 75, "held by pid", "status URL")
	r = runCLI(t, nil, "", "lock", "--timeout", "0.5", "--conflict-exit-code", "9", url, "--", "true")
	r.want(t, 9, "held by pid")
	if r.took > 5*time.Second {
		t.Errorf("a 0.5 s wait took %s", r.took)
	}
	// The holder is killed: recover proves it dead (this host) and revokes
	// its lease at once, and the lock is free without waiting out the TTL.
	_ = holder.Process.Kill()
	_ = holder.Wait()
	r = runCLI(t, nil, "", "recover", url)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "done revoke-lease") {
		t.Errorf("recover after the holder's death:\n%s\nwant its lease revoked", r.stdout)
	}
	runCLI(t, nil, "", "update", "--try", url, "--", "sh", "-c", incr).want(t, 0)
}

type statusJSONView struct {
	Lock     string `json:"lock"`
	StateRev int64  `json:"state_revision"`
}

func hostPorts(eps []string) []string {
	var out []string
	for _, e := range eps {
		out = append(out, strings.TrimPrefix(e, "http://"))
	}
	return out
}

// TestCLIMemberLossAndFailover: with the first endpoint's member dead,
// updates go through the others; with a majority dead, they fail within
// --op-timeout with exit 74 and say why; once the members are back,
// updates work again.
func TestCLIMemberLossAndFailover(t *testing.T) {
	c := startCluster(t)
	url := "etcd://" + strings.Join(hostPorts(c.endpoints()), ",") + "/cli/failover"
	runCLI(t, nil, "", "update", url, "--", "sh", "-c", incr).want(t, 0)

	c.kill(c.members[0])
	r := runCLI(t, nil, "", "update", url, "--", "sh", "-c", incr)
	r.want(t, 0)
	t.Logf("update with the first endpoint's member dead: %s", r.took.Round(time.Millisecond))

	c.kill(c.members[1])
	r = runCLI(t, nil, "", "update", "--op-timeout", "3s", url, "--", "sh", "-c", incr)
	r.want(t, 74, "no answer from etcd", "a majority of its members")
	if r.took > 10*time.Second {
		t.Errorf("a 3 s budget took %s", r.took)
	}
	t.Logf("update without quorum failed after %s:\n%s", r.took.Round(time.Millisecond), r.stderr)

	c.start(c.members[0])
	c.start(c.members[1])
	c.waitLeader(20 * time.Second)
	r = runCLI(t, nil, "", "update", "--op-timeout", "20s", url, "--", "sh", "-c", incr)
	r.want(t, 0)
	gr, err := c.client(t).Get(t.Context(), "/cli/failover")
	if err != nil || len(gr.Kvs) != 1 || strings.TrimSpace(string(gr.Kvs[0].Value)) != "3" {
		t.Fatalf("counter after failover: %v %v; want 3", gr, err)
	}
}

// TestCLIBadURLsAndUnreachable: malformed URLs are usage errors (64) that
// say what is wrong; a cluster that does not answer is 74 within the
// budget, naming the endpoints.
func TestCLIBadURLsAndUnreachable(t *testing.T) {
	for _, tc := range []struct {
		args []string
		has  string
	}{
		{[]string{"update", "etcd:///k", "--", "cat"}, "EXACTFS_ETCD_ENDPOINTS is not set"},
		{[]string{"update", "etcd://127.0.0.1:2379", "--", "cat"}, "no key"},
		{[]string{"update", "etcd://127.0.0.1:99999/k", "--", "cat"}, "port"},
		{[]string{"update", "etcd://127.0.0.1:2379/dir/", "--", "cat"}, "ends in"},
		{[]string{"update", "redis://h/k", "--", "cat"}, `unknown scheme "redis"`},
		{[]string{"update", "etcd://127.0.0.1:2379/k"}, "missing CMD"},
		{[]string{"status", "state.json"}, "not an etcd URL"},
		{[]string{"frobnicate", "etcd://h/k"}, "not a command"},
	} {
		r := runCLI(t, nil, "", tc.args...)
		r.want(t, 64, tc.has)
	}
	// A closed port: nothing listens there.
	dead := freePort(t)
	url := "etcd://127.0.0.1:" + strconv.Itoa(dead) + "/k"
	for _, args := range [][]string{
		{"update", "--op-timeout", "2s", url, "--", "cat"},
		{"lock", "--op-timeout", "2s", url, "--", "true"},
		{"status", "--op-timeout", "2s", url},
	} {
		r := runCLI(t, nil, "", args...)
		r.want(t, 74, "no answer from etcd at http://127.0.0.1:"+strconv.Itoa(dead), "connection refused")
		if r.took > 8*time.Second {
			t.Errorf("%v: a 2 s budget took %s", args, r.took)
		}
	}
}

// TestCLIPausedPastLease: an exactfs-etcd that is stopped (by its own CMD)
// for longer than its lease wrote nothing once it resumes: update exits 75
// saying the lock was lost, and lock ends CMD with SIGTERM and exits 75.
func TestCLIPausedPastLease(t *testing.T) {
	c := startCluster(t)
	url := "etcd://" + strings.Join(hostPorts(c.endpoints()), ",") + "/cli/paused"
	runCLI(t, nil, "", "update", url, "--", "echo", "1").want(t, 0)
	for _, tc := range []struct {
		args []string
		has  []string
	}{
		{[]string{"update", "--ttl", "2s", url, "--", "sh", "-c", "kill -STOP $PPID; echo 2"}, []string{"was lost before the commit", "nothing was written"}},
		{[]string{"lock", "--ttl", "2s", url, "--", "sh", "-c", "kill -STOP $PPID; exec sleep 30"}, []string{"was lost while held", "sending SIGTERM"}},
	} {
		cmd := exec.Command(cliBinary(t), tc.args...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Wait until it is stopped, then past its lease.
		for i := 0; i < 100 && !stopped(cmd.Process.Pid); i++ {
			time.Sleep(50 * time.Millisecond)
		}
		if !stopped(cmd.Process.Pid) {
			t.Fatalf("%v did not stop", tc.args)
		}
		time.Sleep(4 * time.Second)
		_ = cmd.Process.Signal(syscall.SIGCONT)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%v did not end after SIGCONT", tc.args)
		}
		r := cliResult{code: cmd.ProcessState.ExitCode(), stderr: errb.String()}
		r.want(t, 75, tc.has...)
		t.Logf("%s: exit %d:\n%s", tc.args[0], r.code, r.stderr)
	}
	gr, err := c.client(t).Get(t.Context(), "/cli/paused")
	if err != nil || len(gr.Kvs) != 1 || strings.TrimSpace(string(gr.Kvs[0].Value)) != "1" {
		t.Fatalf("key after the paused update: %v %v; want the first write only", gr, err)
	}
}

// stopped says whether process pid is in the stopped state (Linux).
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] == 'T'
}

// TestCLISignals: SIGTERM to exactfs-etcd lock is forwarded to CMD, whose
// status (143) is the exit status, and the lock is released; SIGTERM while
// waiting for the lock ends the wait with 143 and runs nothing.
func TestCLISignals(t *testing.T) {
	c := startCluster(t)
	url := "etcd://" + strings.Join(hostPorts(c.endpoints()), ",") + "/cli/signals"
	holder := exec.Command(cliBinary(t), "lock", url, "--", "sh", "-c", "echo held; exec sleep 30")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill() }()
	buf := make([]byte, 16)
	if n, _ := out.Read(buf); !strings.HasPrefix(string(buf[:n]), "held") {
		t.Fatalf("holder said %q", buf[:n])
	}

	waiter := exec.Command(cliBinary(t), "lock", "--timeout", "30s", url, "--", "echo", "must not run")
	var werr, wout bytes.Buffer
	waiter.Stderr, waiter.Stdout = &werr, &wout
	if err := waiter.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	_ = waiter.Process.Signal(syscall.SIGTERM)
	_ = waiter.Wait()
	if code := waiter.ProcessState.ExitCode(); code != 143 || wout.Len() != 0 || !strings.Contains(werr.String(), "interrupted") {
		t.Errorf("waiter after SIGTERM: exit %d, stdout %q, stderr %q; want 143, nothing run, 'interrupted'", code, wout.String(), werr.String())
	}

	_ = holder.Process.Signal(syscall.SIGTERM)
	_ = holder.Wait()
	if code := holder.ProcessState.ExitCode(); code != 143 {
		t.Errorf("holder after SIGTERM: exit %d, want 143 (CMD's SIGTERM)", code)
	}
	r := runCLI(t, nil, "", "status", url)
	if r.want(t, 0); !strings.Contains(r.stdout, "free") {
		t.Errorf("after the holder ended: %s; want free", r.stdout)
	}
}

// TestCLIRecoverLeaselessKey: a key in the lock's queue that no lease keeps
// (written by hand, not by exactfs) would hold the lock forever; status shows
// it, recover --dry-run only plans, recover deletes it, and the lock works.
func TestCLIRecoverLeaselessKey(t *testing.T) {
	c := startCluster(t)
	url := "etcd://" + strings.Join(hostPorts(c.endpoints()), ",") + "/cli/stray"
	if _, err := c.client(t).Put(t.Context(), "/cli/stray.lock/by-hand", "not metadata"); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "", "status", url)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "not holder metadata") || !strings.Contains(r.stdout, "no lease") {
		t.Errorf("status of a stray key:\n%s", r.stdout)
	}
	runCLI(t, nil, "", "update", "--try", url, "--", "echo", "x").want(t, 75)
	r = runCLI(t, nil, "", "recover", "--dry-run", url)
	if r.want(t, 0); !strings.Contains(r.stdout, "would delete-key /cli/stray.lock/by-hand") {
		t.Errorf("recover --dry-run:\n%s", r.stdout)
	}
	runCLI(t, nil, "", "update", "--try", url, "--", "echo", "x").want(t, 75)
	r = runCLI(t, nil, "", "recover", url)
	if r.want(t, 0); !strings.Contains(r.stdout, "done delete-key /cli/stray.lock/by-hand") {
		t.Errorf("recover:\n%s", r.stdout)
	}
	runCLI(t, nil, "", "update", "--try", url, "--", "echo", "x").want(t, 0)
}
