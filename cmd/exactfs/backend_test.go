//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeEtcdEnv makes this test binary act as a fake exactfs-etcd that
// prints its argv (TestMain).
const fakeEtcdEnv = "EXACTFS_TEST_FAKE_ETCD"

// fakeEtcd writes an exactfs-etcd into dir that prints who it is and its
// arguments, and exits 42.
func fakeEtcd(t *testing.T, dir, who string) {
	t.Helper()
	script := "#!/bin/sh\necho \"" + who + " argv0=$0\"\nfor a in \"$@\"; do echo \"arg=$a\"; done\nexit 42\n"
	if err := os.WriteFile(filepath.Join(dir, etcdCommand), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestEtcdURLsAreHandedToExactfsEtcd: an etcd:// or etcds:// STATEFILE
// runs exactfs-etcd (beside the binary first, then on PATH) with the same
// arguments; without one, a clear message and exit 69; any other scheme://
// is refused; a URL among CMD's arguments is not a backend URL.
func TestEtcdURLsAreHandedToExactfsEtcd(t *testing.T) {
	work := t.TempDir()
	onPath := t.TempDir()
	fakeEtcd(t, onPath, "on-path")
	path := "PATH=" + onPath + ":/usr/bin:/bin"

	for _, args := range [][]string{
		{"update", "etcd://h1:2379,h2:2379/app/state.json", "--", "jq", "-c", ".n += 1"},
		{"lock", "--timeout", "3s", "etcds:///app/state.json", "--", "true"},
		{"status", "--json", "etcd:///k"},
		{"recover", "--dry-run", "ETCD://h/k"},
		{"lock", "--endpoints", "h1:2379", "etcd:///k", "--", "true"}, // a flag only exactfs-etcd knows
	} {
		r := runEnv(t, work, []string{path}, args...)
		expectCode(t, r, 42, strings.Join(args, " "))
		want := "on-path argv0=" + filepath.Join(onPath, etcdCommand) + "\n"
		for _, a := range args {
			want += "arg=" + a + "\n"
		}
		if r.stdout != want {
			t.Errorf("%s: exactfs-etcd saw\n%s\nwant\n%s", strings.Join(args, " "), r.stdout, want)
		}
	}

	// Beside the binary wins over PATH.
	bin := t.TempDir()
	data, err := os.ReadFile(exactfsBin)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(bin, "exactfs"), data, 0o755)
	fakeEtcd(t, bin, "beside")
	cmd := exec.Command(filepath.Join(bin, "exactfs"), "status", "etcd:///k")
	cmd.Env = append(os.Environ(), path)
	out, _ := cmd.Output()
	if !strings.HasPrefix(string(out), "beside ") || cmd.ProcessState.ExitCode() != 42 {
		t.Errorf("with exactfs-etcd beside the binary: exit %d, %q", cmd.ProcessState.ExitCode(), out)
	}

	// The exact argv, seen by a real executable (a script loses argv[0]):
	// the name exactfs was run by, then the same arguments.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err = os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	goFake := t.TempDir()
	os.WriteFile(filepath.Join(goFake, etcdCommand), data, 0o755)
	r := runEnv(t, work, []string{"PATH=" + goFake + ":/usr/bin:/bin", fakeEtcdEnv + "=1"}, "update", "-w", "1", "etcd:///k", "--", "a b", "")
	expectCode(t, r, 42, "update etcd:///k with the Go fake")
	if want := fmt.Sprintf("argv %q\n", []string{exactfsBin, "update", "-w", "1", "etcd:///k", "--", "a b", ""}); r.stdout != want {
		t.Errorf("exactfs-etcd ran with\n%s want\n%s", r.stdout, want)
	}

	// Absent: say how to install it.
	r = runEnv(t, work, []string{"PATH=/usr/bin:/bin"}, "update", "etcd://h/app/state.json", "--", "cat")
	expectCode(t, r, exitUnavail, "update etcd://... without exactfs-etcd")
	if !strings.Contains(r.stderr, etcdInstall) || !strings.Contains(r.stderr, "not installed") {
		t.Errorf("no install hint:\n%s", r.stderr)
	}

	// Other schemes are refused, and nothing is created for them.
	for _, u := range []string{"http://h/state.json", "consul://h/k", "s3://bucket/key"} {
		r := runEnv(t, work, []string{path}, "lock", u, "--", "touch", "ran")
		expectCode(t, r, exitUsage, "lock "+u)
		if !strings.Contains(r.stderr, "unsupported backend scheme") {
			t.Errorf("lock %s: %s", u, r.stderr)
		}
	}
	if names, _ := os.ReadDir(work); len(names) != 0 {
		t.Fatalf("a refused URL left files: %v", names)
	}

	// A URL that is CMD's argument, or a path that merely contains "://"
	// further on, is not a backend URL.
	r = runEnv(t, work, []string{path}, "lock", "s", "--", "echo", "etcd://not-a-backend")
	expectCode(t, r, 0, "lock s -- echo etcd://...")
	if r.stdout != "etcd://not-a-backend\n" {
		t.Errorf("CMD's output: %q", r.stdout)
	}
	os.Mkdir(filepath.Join(work, "a:"), 0o700)
	expectCode(t, runEnv(t, work, []string{path}, "lock", "--mkdir", "a://b", "--", "true"), exitUsage, "lock a://b")
	expectCode(t, runEnv(t, work, []string{path}, "lock", "./a://b", "--", "true"), 0, "lock ./a://b (a path)")
}
