//go:build unix

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/liveness"
)

// TestCLIFlagsAndGuardsBothBackends runs one table of flags and guards
// through the core exactfs command against a state file and against an
// etcd key (which exactfs hands over to exactfs-etcd): the same flags are
// accepted (flock's short ones, --timeout none, -c), the same ones refused,
// an empty stdout is refused with 65 unless --allow-empty, and a busy lock
// gives the same statuses (-n, -E, -q, -w).
func TestCLIFlagsAndGuardsBothBackends(t *testing.T) {
	c := startCluster(t)
	core := coreBinary(t)
	dir := t.TempDir()
	backends := []struct{ name, target string }{
		{"file", filepath.Join(dir, "state")},
		{"etcd", "etcd://" + strings.Join(hostPorts(c.endpoints()), ",") + "/flags/state"},
	}
	raw := c.client(t)
	value := func(target string) string {
		t.Helper()
		if !strings.HasPrefix(target, "etcd://") {
			b, err := os.ReadFile(target)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		r, err := raw.Get(context.Background(), "/flags/state")
		if err != nil || len(r.Kvs) != 1 {
			t.Fatalf("reading the key: %v %v", r, err)
		}
		return string(r.Kvs[0].Value)
	}
	type step struct {
		args  []string // with X for the target
		code  int
		value string // the state afterwards, "" for not checked; "<empty>" for empty
		quiet bool   // stderr must be empty
		has   string // stderr must say this
	}
	free := []step{
		{args: []string{"update", "X", "--", "echo", "1"}, code: 0, value: "1\n"},
		{args: []string{"update", "X", "--", "true"}, code: 65, value: "1\n", has: "printed nothing"},
		{args: []string{"update", "--allow-empty", "X", "--", "true"}, code: 0, value: "<empty>"},
		{args: []string{"update", "-c", "echo 2", "X"}, code: 0, value: "2\n"},
		{args: []string{"update", "-w", "3", "X", "--", "sh", "-c", incr}, code: 0, value: "3\n"},
		{args: []string{"update", "--timeout", "none", "X", "--", "sh", "-c", incr}, code: 0, value: "4\n"},
		{args: []string{"update", "-n", "X", "--", "sh", "-c", incr}, code: 0, value: "5\n"},
		{args: []string{"lock", "-x", "X", "--", "true"}, code: 0},
		{args: []string{"lock", "-c", "exit 7", "X"}, code: 7},
		{args: []string{"update", "--try", "--timeout", "3", "X", "--", "cat"}, code: 64, has: "give one of them"},
		{args: []string{"update", "-s", "X", "--", "cat"}, code: 64, has: "--shared is not available"},
		{args: []string{"update", "-c", "cat", "X", "extra"}, code: 64, has: "nothing may follow"},
	}
	busy := []step{
		{args: []string{"update", "-n", "X", "--", "cat"}, code: 75, value: "5\n"},
		{args: []string{"update", "-n", "-E", "0", "X", "--", "cat"}, code: 0, quiet: true},
		{args: []string{"update", "-n", "-q", "X", "--", "cat"}, code: 75, quiet: true},
		{args: []string{"update", "-n", "-E", "3", "X", "--", "cat"}, code: 3},
		{args: []string{"lock", "-w", "0.5", "X", "--", "true"}, code: 75},
	}
	run := func(b struct{ name, target string }, s step) {
		t.Helper()
		args := make([]string, len(s.args))
		for i, a := range s.args {
			if a == "X" {
				a = b.target
			}
			args[i] = a
		}
		r := runBinary(t, core, nil, "", args...)
		if r.code != s.code {
			t.Errorf("%s: exactfs %s: exit %d, want %d\nstderr: %s", b.name, strings.Join(args, " "), r.code, s.code, r.stderr)
		}
		if s.quiet && r.stderr != "" {
			t.Errorf("%s: exactfs %s printed %q, want nothing", b.name, strings.Join(args, " "), r.stderr)
		}
		if s.has != "" && !strings.Contains(r.stderr, s.has) {
			t.Errorf("%s: exactfs %s: stderr %q does not say %q", b.name, strings.Join(args, " "), r.stderr, s.has)
		}
		want := s.value
		if want == "<empty>" {
			want = ""
		}
		if s.value != "" {
			if got := value(b.target); got != want {
				t.Errorf("%s: after exactfs %s: state %q, want %q", b.name, strings.Join(args, " "), got, want)
			}
		}
	}
	for _, b := range backends {
		for _, s := range free {
			run(b, s)
		}
		holder := exec.Command(core, "lock", b.target, "--", "sh", "-c", "echo held; exec sleep 60")
		out, err := holder.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := holder.Start(); err != nil {
			t.Fatal(err)
		}
		line := make([]byte, 16)
		if n, _ := out.Read(line); !strings.HasPrefix(string(line[:n]), "held") {
			t.Fatalf("%s: the holder printed %q", b.name, line[:n])
		}
		for _, s := range busy {
			run(b, s)
		}
		_ = holder.Process.Signal(os.Interrupt)
		_ = holder.Wait()
	}
	// The etcd lock is free again at the first attempt.
	cl := etcd.NewClient(c.client(t), etcd.WithHostIdentity(liveness.FixedHostIdentity("e2e-host")))
	defer cl.Close()
	h, err := cl.Locker("/flags/state").Acquire(context.Background(), 5*time.Second)
	if err != nil {
		t.Fatalf("after the table: %v", err)
	}
	_ = h.Unlock()
}
