package statelock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/tsseed"
)

// envNamed is newEnv with a state file name of n bytes.
func envNamed(t *testing.T, n int) *testEnv {
	t.Helper()
	e := newEnv(t)
	e.state = filepath.Join(e.dir, strings.Repeat("s", n))
	e.lock = e.state + ".lock"
	e.claim = e.state + ".lock.transition"
	e.sidecar = e.claim + ".owner"
	return e
}

// TestLongStateFileNames: the lock works beside state file names as long as
// the reference's own limit (F.lock.transition.owner must fit in NAME_MAX:
// 233 bytes). The staging name of a published record adds 46 bytes, so from
// 188 bytes the sidecar, and from 205 F.lock, are created in place, as the
// reference creates them, with the same guarantee as a published record's
// kernel evidence: the OFD lock is on the inode before its first byte (the
// hook at the write finds the record at its name, empty, and locked). On
// 7b17545 every name from 188 bytes failed with lock_initialization_failed.
func TestLongStateFileNames(t *testing.T) {
	for _, n := range []int{187, 188, 205, 231, 233} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			e := envNamed(t, n)
			var mu sync.Mutex
			inPlace := map[string]bool{}
			defer hook.Set(hook.LockOwnerRecordWrite, func(p string) {
				f, err := os.Open(p)
				if err != nil {
					return // staged under a private name: not at p yet
				}
				defer f.Close()
				fi, _ := f.Stat()
				held, known := ofdHeld(f)
				mu.Lock()
				defer mu.Unlock()
				if fi.Size() != 0 || !held || !known {
					t.Errorf("%s at its own write: %d bytes, OFD lock held %v (known %v)", filepath.Base(p)[n:], fi.Size(), held, known)
				}
				inPlace[filepath.Base(p)[n:]] = true
			})()
			for range 2 {
				h, err := Lock(context.Background(), e.state, e.opts()...)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Unlock(); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			want := map[string]bool{}
			if n+len(".lock.transition.owner")+46 > 255 {
				want[".lock.transition.owner"] = true
			}
			if n+len(".lock")+46 > 255 {
				want[".lock"] = true
			}
			if fmt.Sprint(inPlace) != fmt.Sprint(want) {
				t.Errorf("records created in place: %v, want %v", inPlace, want)
			}
			mu.Unlock()
			assertSteadyState(t, e, true)
		})
	}
}

// TestLongStateFileNameWithTS: a TypeScript reference worker and a Go
// holder share one lock beside a 205-byte state file name, where Go creates
// both F.lock and the sidecar in place: the worker waits while Go holds it
// and takes it after the release, and Go takes the worker's tombstone after
// it. (205 and not longer: the worker's own state write stages its file
// under the name plus about 50 bytes.)
func TestLongStateFileNameWithTS(t *testing.T) {
	e := envNamed(t, 205)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	logf := filepath.Join(e.dir, "ts.log")
	ts := tsseed.Command(t, e.configRoot, e.state, 1, 0, logf)
	var out bytes.Buffer
	ts.Stdout, ts.Stderr = &out, &out
	if err := ts.Start(); err != nil {
		t.Fatal(err)
	}
	defer ts.Process.Kill()
	if waitForEnter(t, logf, time.Second) {
		t.Fatalf("the TypeScript worker entered while Go held the lock:\n%s", out.String())
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := ts.Wait(); err != nil {
		t.Fatalf("TypeScript worker: %v\n%s", err, out.String())
	}
	if b := mustRead(t, e.state); !bytes.Contains(b, []byte(`"n":1`)) {
		t.Fatalf("state after the TypeScript increment: %s", b)
	}
	h, err = TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	assertSteadyState(t, e, false)
}

// TestLongNameKilledWhileEmpty: beside a 205-byte state file name both
// records are created in place, so a holder SIGKILLed between the create
// and the write leaves an empty record, as a reference peer would. It is
// created and never written: kept while its creator could still be inside
// open(O_CREAT) (SPEC §4.4, 30 s), then reclaimed by the abandoned-write
// rule (its mtime is set back here instead of waiting), with no manual step.
func TestLongNameKilledWhileEmpty(t *testing.T) {
	for _, which := range []string{"sidecar", "F.lock"} {
		t.Run(which, func(t *testing.T) {
			e := envNamed(t, 205)
			target := e.sidecar
			if which == "F.lock" {
				// The sidecar exists (a tombstone, reused), F.lock not.
				h, err := Lock(context.Background(), e.state, e.opts()...)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Unlock(); err != nil {
					t.Fatal(err)
				}
				if err := os.Remove(e.lock); err != nil {
					t.Fatal(err)
				}
				target = e.lock
			}
			runKilledAt(t, e, "killat", hook.LockOwnerRecordWrite, "STATELOCK_KILL_IN=lock")
			if b := mustRead(t, target); len(b) != 0 {
				t.Fatalf("%s after the kill: %q, want empty", target, b)
			}
			// The killed worker's claim is judged once it is a second old
			// (set back here): its sidecar is the empty record (which
			// keeps it), or the worker's record with no kernel lock left
			// (which frees it, and F.lock's empty record keeps the lock).
			// Since SPEC §4.8.4 a taker leaves a tombstone sidecar as it
			// found it (the kernel lock attests the claim): then the
			// crashed claim is freed once that tombstone is a second old,
			// so its mtime is set back too.
			old := time.Now().Add(-time.Minute)
			os.Chtimes(e.claim, old, old)
			if which == "F.lock" {
				os.Chtimes(e.sidecar, old, old)
			}
			before := stateOf(t, target)
			_, err := TryLock(e.state, e.opts()...)
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "malformed record, possibly still being written") {
				t.Fatalf("TryLock beside a record created a moment ago and never written: %v", err)
			}
			t.Logf("kept: %v", err)
			before.assertSame(t, target)
			os.Chtimes(target, old, old)
			h, err := Lock(context.Background(), e.state, e.opts(WithWait(5*time.Second))...)
			if err != nil {
				t.Fatalf("Lock once the empty %s is older than 30 s: %v", which, err)
			}
			if err := h.Unlock(); err != nil {
				t.Fatal(err)
			}
			assertSteadyState(t, e, true)
		})
	}
}
