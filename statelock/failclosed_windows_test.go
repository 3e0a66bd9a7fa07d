package statelock

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
	"github.com/exactfs/exactfs/liveness"
)

// TestWindowsLockFailsClosed: with internal/sys's gate shut, as it is in
// every program until the Windows port is done (issue 22), Lock, TryLock,
// With, Update, Inspect and Recover must refuse on Windows and create
// nothing: no lock record, no sidecar, no claim directory, no config root
// or secret, and the state file unchanged. Each runs twice: with a config
// root (the host identity step refuses first) and with a fixed host
// identity (so the lock's own file steps are reached). This test binary
// opens the gate (main_windows_test.go), so the test shuts it again.
func TestWindowsLockFailsClosed(t *testing.T) {
	t.Cleanup(sys.CloseGateForTest())
	for _, mode := range []string{"config-root", "fixed-host"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			state := filepath.Join(dir, "state.json")
			const content = `{"n":1}`
			if err := os.WriteFile(state, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			opts := []Option{WithWait(200 * time.Millisecond), WithConfigRoot(filepath.Join(dir, "config"))}
			if mode == "fixed-host" {
				opts = append(opts, WithHostIdentity(liveness.FixedHostIdentity("0123456789abcdef0123456789abcdef")))
			}
			before := testfs.Tree(t, dir)
			ctx := context.Background()
			called := false
			for _, tc := range []struct {
				name string
				op   func() error
			}{
				{"Lock", func() error {
					h, err := Lock(ctx, state, opts...)
					if err == nil {
						h.Unlock()
					}
					return err
				}},
				{"TryLock", func() error {
					h, err := TryLock(state, opts...)
					if err == nil {
						h.Unlock()
					}
					return err
				}},
				{"With", func() error { return With(ctx, state, func() error { called = true; return nil }, opts...) }},
				{"Update", func() error {
					return Update(ctx, state, func(old []byte) ([]byte, error) { called = true; return []byte(`{"n":2}`), nil }, opts...)
				}},
				{"Inspect", func() error { _, err := Inspect(state, opts...); return err }},
				{"Recover", func() error { _, err := Recover(state, false, opts...); return err }},
			} {
				t.Run(tc.name, func(t *testing.T) {
					err := tc.op()
					if err == nil {
						t.Fatalf("%s succeeded on Windows, where the port is not done", tc.name)
					}
					if called {
						t.Fatalf("%s ran the caller's function before it refused: %v", tc.name, err)
					}
					// The refusal comes from below the lock (host identity, process
					// evidence or a file step), so the outcome is the lock's own
					// initialization failure, and the cause says "unsupported".
					if string(exactfs.CodeOf(err)) != string(ReasonInitFailed) || !strings.Contains(err.Error(), "unsupported") {
						t.Fatalf("%s: %v (code %q), want %s caused by an unsupported platform", tc.name, err, exactfs.CodeOf(err), ReasonInitFailed)
					}
					t.Logf("%s: %v", tc.name, err)
					if after := testfs.Tree(t, dir); !slices.Equal(after, before) {
						t.Fatalf("%s changed the directory:\nbefore %q\nafter  %q", tc.name, before, after)
					}
					if b, err := os.ReadFile(state); err != nil || string(b) != content {
						t.Fatalf("%s changed the state file: %q, %v", tc.name, b, err)
					}
				})
			}
		})
	}
}
