//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/etcd/internal/etcdhook"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/locker"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// waitCount waits until prefix has n keys.
func waitCount(t *testing.T, raw *clientv3.Client, prefix string, n int64) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		r, err := raw.Get(context.Background(), prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err == nil && r.Count == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never had %d keys", prefix, n)
		}
	}
}

// TestReleaseHolder: ReleaseHolder ends the holder named by its token, and
// only it. A holder that looks alive is refused without evenIfAlive; a
// token that is not the holder's is refused; a released holder's Lost
// closes and its successor waits its lock-delay (the lock was lost, not
// released). When the holder releases the lock itself after it was judged
// (the ReleaseJudged hook), nothing is done: neither a successor of
// another client nor one that shares the holder's session lease (a
// successor in the same client) loses its lock. Revoking the lease that
// was observed, without the compare on the key, ends the second.
func TestReleaseHolder(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	id := etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host"))
	const delay = 1500 * time.Millisecond
	ctx := context.Background()

	t.Run("stuck", func(t *testing.T) {
		key := "/e2e/release/stuck"
		a := etcd.NewClient(c.client(t), id)
		defer a.Close()
		held, err := a.Locker(key).Acquire(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		lost := held.Lost()
		b := etcd.NewClient(c.client(t), id, etcd.WithLockDelay(delay))
		defer b.Close()
		type result struct {
			h   *etcd.Held
			err error
			at  time.Time
		}
		done := make(chan result, 1)
		go func() {
			h, err := b.Locker(key).Acquire(ctx, 30*time.Second)
			done <- result{h, err, time.Now()}
		}()
		waitCount(t, raw, key+etcd.LockSuffix, 2)
		op := etcd.NewClient(c.client(t), id)
		defer op.Close()
		l := op.Locker(key)

		_, err = l.ReleaseHolder(ctx, held.Revision()+1, true, false)
		var changed *etcd.HolderChangedError
		if !errors.As(err, &changed) || changed.Now == nil || changed.Now.Token != held.Revision() {
			t.Fatalf("another token: %v; want a refusal naming the holder's token", err)
		}
		_, err = l.ReleaseHolder(ctx, held.Revision(), false, false)
		var alive *etcd.HolderAliveError
		if !errors.As(err, &alive) {
			t.Fatalf("a live holder without evenIfAlive: %v; want HolderAliveError", err)
		}
		t.Logf("refused: %v", err)
		r, err := l.ReleaseHolder(ctx, held.Revision(), true, true)
		if err != nil || !r.DryRun || r.Revoked {
			t.Fatalf("dry run: %+v, %v", r, err)
		}
		select {
		case <-lost:
			t.Fatal("the holder lost its lock to a refusal or a dry run")
		case <-time.After(100 * time.Millisecond):
		}

		t0 := time.Now()
		r, err = l.ReleaseHolder(ctx, held.Revision(), true, false)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Revoked || !r.Alive || r.Holder.Key != held.Key() || r.Holder.Lease != held.Lease() || r.Holder.Meta == nil || r.Holder.Meta.Pid != os.Getpid() {
			t.Fatalf("release: %+v; want the holder's lease revoked, its key, lease and pid named", r)
		}
		select {
		case <-lost:
			if !errors.Is(held.Err(), locker.ErrLost) {
				t.Errorf("the released holder's Err: %v", held.Err())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the released holder's Lost never closed")
		}
		res := <-done
		if res.err != nil {
			t.Fatalf("the waiter: %v", res.err)
		}
		t.Logf("the waiter got the lock %s after the release (lock-delay %s)", res.at.Sub(t0).Round(time.Millisecond), res.h.Delayed())
		if res.h.Delayed() != delay {
			t.Errorf("the waiter delayed %s; a forcibly released holder lost the lock: want the lock-delay %s", res.h.Delayed(), delay)
		}
		if err := held.Unlock(); !errors.Is(err, locker.ErrLost) {
			t.Errorf("the released holder's Unlock: %v; want ErrLost", err)
		}
		if err := res.h.Unlock(); err != nil {
			t.Errorf("the successor's Unlock: %v", err)
		}
	})

	// The holder releases the lock right after it was judged, and a
	// successor takes it: the release must do nothing.
	race := func(t *testing.T, key string, shared bool) {
		a := etcd.NewClient(c.client(t), id)
		defer a.Close()
		held, err := a.Locker(key).Acquire(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		succClient := a // the successor shares the holder's session lease
		if !shared {
			succClient = etcd.NewClient(c.client(t), id)
			defer succClient.Close()
		}
		got := make(chan *etcd.Held, 1)
		go func() {
			h, err := succClient.Locker(key).Acquire(ctx, 30*time.Second)
			if err != nil {
				t.Errorf("the successor: %v", err)
			}
			got <- h
		}()
		waitCount(t, raw, key+etcd.LockSuffix, 2)
		var succ *etcd.Held
		restore := hook.Set(etcdhook.ReleaseJudged, func(string) {
			if err := held.Unlock(); err != nil {
				t.Errorf("the holder's own release: %v", err)
			}
			succ = <-got
		})
		op := etcd.NewClient(c.client(t), id)
		defer op.Close()
		_, err = op.Locker(key).ReleaseHolder(ctx, held.Revision(), true, false)
		restore()
		var changed *etcd.HolderChangedError
		if !errors.As(err, &changed) || !changed.During {
			t.Errorf("a holder that released as it was judged: %v; want HolderChangedError (During)", err)
		}
		if succ == nil {
			t.Fatal("no successor")
		}
		select {
		case <-succ.Lost():
			t.Fatalf("the successor lost its lock: %v", succ.Err())
		case <-time.After(500 * time.Millisecond):
		}
		gr, err := raw.Get(ctx, succ.Key())
		if err != nil || len(gr.Kvs) != 1 || gr.Kvs[0].CreateRevision != succ.Revision() {
			t.Fatalf("the successor's key %s: %v %v; want it still there", succ.Key(), gr, err)
		}
		if err := succ.Unlock(); err != nil {
			t.Errorf("the successor's Unlock: %v", err)
		}
	}
	t.Run("race-other-client", func(t *testing.T) { race(t, "/e2e/release/race-other", false) })
	t.Run("race-same-lease", func(t *testing.T) { race(t, "/e2e/release/race-same", true) })
}

// TestCLIReleaseHolder: a holder of exactfs-etcd lock stopped (SIGSTOP,
// CMD included) inside its CMD, with its lease still kept: recover
// --release-holder refuses it as alive, refuses another token, and with
// --even-if-alive revokes its lease and says what it revoked. The waiter
// gets the lock after its lock-delay; the stopped holder, continued,
// finds its lock lost, sends its CMD SIGTERM and exits 75. An update holder
// released the same way writes nothing when continued.
func TestCLIReleaseHolder(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	dir := t.TempDir()
	eps := strings.Join(hostPorts(c.endpoints()), ",")
	bin := cliBinary(t)
	startGroup := func(args []string, env ...string) *exec.Cmd {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		var stderr strings.Builder
		cmd.Stderr = &lockedWriter{b: &stderr}
		cmd.SysProcAttr = childAttr()
		cmd.SysProcAttr.Setpgid = true // SIGSTOP reaches CMD too
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGCONT)
			_ = cmd.Wait()
		})
		return cmd
	}
	holderToken := func(url string) int64 {
		t.Helper()
		r := runCLI(t, nil, "", "status", "--json", url)
		r.want(t, 0)
		var st struct {
			Holder *struct {
				Token int64 `json:"token"`
				Pid   int   `json:"pid"`
			} `json:"holder"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Holder == nil {
			t.Fatalf("status --json: %q, %v; want a holder", r.stdout, err)
		}
		return st.Holder.Token
	}

	t.Run("lock", func(t *testing.T) {
		key := "/release/cli-lock"
		url := "etcd://" + eps + key
		logA, logB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		hold := func(extra ...string) []string {
			return append(append([]string{"lock", "--ttl", "30s"}, extra...), url, "--", os.Args[0], "-test.run=^$")
		}
		holder := startGroup(hold(), roleEnv+"="+roleHold, argsEnv+"="+logA+"\n120")
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if e, _ := holdTimes(t, logA); e != 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the holder's CMD never started")
			}
		}
		token := holderToken(url)
		waiter := startGroup(hold("--timeout", "60s"), roleEnv+"="+roleHold, argsEnv+"="+logB+"\n0.2")
		waitCount(t, raw, key+".lock/", 2)
		if err := syscall.Kill(-holder.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}

		r := runCLI(t, nil, "", "recover", url)
		if r.want(t, 0); !strings.Contains(r.stdout, "nothing to recover") || !strings.Contains(r.stdout, "--release-holder "+strconv.FormatInt(token, 10)) {
			t.Errorf("recover with a stopped holder:\n%s\nwant nothing done, and the way to release it named", r.stdout)
		}
		r = runCLI(t, nil, "", "recover", "--release-holder", strconv.FormatInt(token, 10), url)
		r.want(t, 75, "looks alive", "--even-if-alive")
		r = runCLI(t, nil, "", "recover", "--release-holder", strconv.FormatInt(token-1, 10), url)
		r.want(t, 76, "not token", "nothing was done")
		if got := holderToken(url); got != token {
			t.Fatalf("after two refusals the holder is token %d, want %d", got, token)
		}

		t0 := time.Now()
		r = runCLI(t, nil, "", "recover", "--release-holder", strconv.FormatInt(token, 10), "--even-if-alive", url)
		r.want(t, 0)
		t.Logf("recover --release-holder:\n%s", r.stdout)
		for _, want := range []string{"revoked its lease", key + ".lock/", "token " + strconv.FormatInt(token, 10), "pid " + strconv.Itoa(holder.Process.Pid), "held the lock for at most", "looked alive"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("recover --release-holder does not say %q", want)
			}
		}
		if err := waiter.Wait(); err != nil {
			t.Fatalf("the waiter: %v\n%s", err, waiter.Stderr)
		}
		took := time.Since(t0)
		if e, _ := holdTimes(t, logB); e == 0 {
			t.Fatal("the waiter's CMD never ran")
		}
		t.Logf("the waiter was done %s after the release began", took.Round(time.Millisecond))
		if took < defaultLockDelayCLI {
			t.Errorf("the waiter was done %s after the release: it did not wait its lock-delay (%s)", took, defaultLockDelayCLI)
		}
		if err := syscall.Kill(-holder.Process.Pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		err := holder.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 75 {
			t.Errorf("the continued holder exited with %v, want 75\n%s", err, holder.Stderr)
		}
		if _, x := holdTimes(t, logA); x == 0 {
			t.Errorf("the continued holder's CMD never ended its critical section (no SIGTERM?)")
		}
		if s := holder.Stderr.(*lockedWriter).String(); !strings.Contains(s, "SIGTERM") || !strings.Contains(s, "lost") {
			t.Errorf("the continued holder says:\n%s\nwant the lost lock and the SIGTERM to its CMD", s)
		}
	})

	t.Run("update", func(t *testing.T) {
		key := "/release/cli-update"
		url := "etcd://" + eps + key
		if _, err := raw.Put(context.Background(), key, "1"); err != nil {
			t.Fatal(err)
		}
		ready, goOn := filepath.Join(dir, "ready"), filepath.Join(dir, "go")
		script := "cat >/dev/null; touch " + ready + "; while [ ! -e " + goOn + " ]; do sleep 0.05; done; echo 1000"
		holder := startGroup([]string{"update", "--ttl", "30s", url, "--", "sh", "-c", script})
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(ready); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the holder's CMD never started")
			}
		}
		if err := syscall.Kill(-holder.Process.Pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		token := holderToken(url)
		runCLI(t, nil, "", "recover", "--release-holder", strconv.FormatInt(token, 10), "--even-if-alive", url).want(t, 0)
		runCLI(t, nil, "", "update", url, "--", "sh", "-c", incr).want(t, 0)
		if err := os.WriteFile(goOn, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(-holder.Process.Pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		err := holder.Wait()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 75 {
			t.Errorf("the continued update holder exited with %v, want 75\n%s", err, holder.Stderr)
		}
		t.Logf("the continued update holder:\n%s", holder.Stderr)
		gr, err := raw.Get(context.Background(), key)
		if err != nil || len(gr.Kvs) != 1 || strings.TrimSpace(string(gr.Kvs[0].Value)) != "2" {
			t.Fatalf("the key: %v %v; want 2 (the released holder's 1000 refused)", gr, err)
		}
	})
}

// defaultLockDelayCLI is exactfs-etcd lock's default --lock-delay.
const defaultLockDelayCLI = 2 * time.Second
