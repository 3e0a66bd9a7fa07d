package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sparseGiB makes a 1 GiB sparse file at p.
func sparseGiB(t *testing.T, p string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
}

// TestUpdateOverHugeRecord: 'exactfs update --timeout 2s' over a 1 GiB
// sparse F.lock or sidecar gives up with its timeout, naming the
// oversized record, without reading it (peak RSS from getrusage); and a
// SIGTERM during a long wait over one ends the call at once. On 7b17545
// it took 35-41 s and 4-5 GB, and ignored SIGTERM for a minute.
func TestUpdateOverHugeRecord(t *testing.T) {
	for _, suffix := range []string{".lock", ".lock.transition.owner"} {
		t.Run(strings.TrimPrefix(suffix, "."), func(t *testing.T) {
			dir := t.TempDir()
			sparseGiB(t, filepath.Join(dir, "s.json"+suffix))
			run := func(timeout string, term bool) (*os.ProcessState, string) {
				cmd := exec.Command(exactfsBin, "update", "--timeout", timeout, "s.json", "--", "cat")
				cmd.Dir = dir
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan struct{})
				go func() { cmd.Wait(); close(done) }()
				if term {
					time.Sleep(500 * time.Millisecond)
					cmd.Process.Signal(syscall.SIGTERM)
				}
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					cmd.Process.Kill()
					<-done
					t.Fatalf("exactfs update still running after 30s (timeout %s, SIGTERM %v): %s", timeout, term, out.String())
				}
				return cmd.ProcessState, out.String()
			}
			st, out := run("2s", false)
			rss := st.SysUsage().(*syscall.Rusage).Maxrss
			t.Logf("--timeout 2s: exit %d, peak RSS %d KiB: %s", st.ExitCode(), rss, strings.TrimSpace(out))
			if st.ExitCode() == 0 || !strings.Contains(out, "larger than any record") {
				t.Errorf("exit %d, %q: want a timeout naming the oversized record", st.ExitCode(), out)
			}
			if rss > 100<<10 {
				t.Errorf("peak RSS %d KiB: the record was read", rss)
			}
			st, out = run("60s", true)
			t.Logf("SIGTERM during --timeout 60s: exit %d: %s", st.ExitCode(), strings.TrimSpace(out))
			if st.ExitCode() == 0 {
				t.Errorf("exit 0 after SIGTERM: %s", out)
			}
		})
	}
}
