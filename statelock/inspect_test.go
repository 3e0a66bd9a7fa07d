//go:build unix

package statelock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
)

func TestInspectStates(t *testing.T) {
	e := newEnv(t)
	st, err := Inspect(e.state, e.opts()...)
	if err != nil || st.State != StateFree || st.Claim.Present {
		t.Fatalf("fresh: %+v %v", st, err)
	}
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	st, err = Inspect(e.state, e.opts()...)
	// Kernel: our OFD lock vouches for us where there are OFD locks (Linux);
	// elsewhere the record claims none, and says so.
	if err != nil || st.State != StateHeld || st.Holder == nil || st.Holder.Pid != int64(os.Getpid()) ||
		!st.Holder.ThisHost || st.Holder.Kernel != ofdSupported || st.Holder.Verdict != "alive" {
		t.Fatalf("held: %+v %+v %v", st, st.Holder, err)
	}
	t.Log(st.Holder.Description)
	h.Unlock()
	st, _ = Inspect(e.state, e.opts()...)
	if st.State != StateReleased {
		t.Fatalf("released: %+v", st)
	}
	e.tsRecord(t, 4242, e.host.ID, 0)
	st, _ = Inspect(e.state, e.opts(probeSays(syscall.ESRCH))...)
	if st.State != StateStale || st.Holder.Verdict != "dead" {
		t.Fatalf("stale: %+v %+v", st, st.Holder)
	}
	os.Remove(e.lock)
	os.Symlink("/etc/passwd", e.lock)
	st, _ = Inspect(e.state, e.opts()...)
	if st.State != StateUnsafe {
		t.Fatalf("symlink: %+v", st)
	}
}

func TestRecoverClaimWithoutSidecar(t *testing.T) {
	e := newEnv(t)
	os.Mkdir(e.claim, 0o700)
	placeholder := filepath.Join(e.dir, exactfs.PlaceholderPrefix+"fd-1234")
	os.WriteFile(placeholder, nil, 0o600)
	quarantined := filepath.Join(e.dir, exactfs.LockQuarantinePrefix+"00000000-0000-4000-8000-000000000000.json")
	os.WriteFile(quarantined, tombstone("t", e.host.ID).Encode(), 0o600)
	young := filepath.Join(e.dir, exactfs.PlaceholderPrefix+"fd-5678")
	os.WriteFile(young, nil, 0o600)
	old := time.Now().Add(-20 * time.Minute)
	for _, p := range []string{placeholder, quarantined} {
		os.Chtimes(p, old, old)
	}
	// Not older than the boot: that alone would prove its taker gone.
	recent := time.Now().Add(-time.Minute)
	os.Chtimes(e.claim, recent, recent)
	// The automatic rules refuse a claim without a sidecar.
	if _, err := TryLock(e.state, e.opts()...); !errorsIsLocked(err) {
		t.Fatalf("TryLock: %v", err)
	}
	st, _ := Inspect(e.state, e.opts()...)
	if !st.Claim.Present || st.Claim.Crashed || !st.Claim.Empty || len(st.Residue) != 3 {
		t.Fatalf("inspect: %+v", st)
	}
	acts, err := Recover(e.state, true, e.opts()...)
	if err != nil || len(acts) != 3 {
		t.Fatalf("dry run: %+v %v", acts, err)
	}
	for _, a := range acts {
		if a.Done {
			t.Fatalf("dry run did something: %+v", a)
		}
	}
	if _, err := os.Lstat(e.claim); err != nil {
		t.Fatal("dry run removed the claim")
	}
	acts, err = Recover(e.state, false, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, a := range acts {
		if !a.Done {
			t.Errorf("not done: %+v", a)
		}
		kinds = append(kinds, a.Kind+": "+a.Evidence)
	}
	t.Log(strings.Join(kinds, "\n"))
	for _, p := range []string{e.claim, placeholder, quarantined} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Errorf("%s still there", p)
		}
	}
	if _, err := os.Lstat(young); err != nil {
		t.Error("a young placeholder was removed")
	}
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	h.Unlock()
}

// Recover removes an empty F.lock once it is old and nobody holds a kernel
// lock on it, even while some process keeps it open for writing (a writer
// stopped, or one that leaked its descriptor), which automatic reclaim
// refuses; a young one is left alone. (An empty record nobody has open for
// writing is reclaimed by Lock itself: TestPowerLossRule.) Where the kernel
// cannot say whether a process holds a lock on it (no OFD locks: macOS, the
// BSDs, the portable build), Recover keeps it, says why and how to remove
// it by hand, and the lock works once a person has.
func TestRecoverEmptyLock(t *testing.T) {
	e := newEnv(t)
	os.WriteFile(e.lock, nil, 0o600)
	w, err := os.OpenFile(e.lock, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if acts, err := Recover(e.state, false, e.opts()...); err != nil || len(acts) != 0 {
		t.Fatalf("young empty record: %+v %v", acts, err)
	}
	old := time.Now().Add(-time.Minute)
	os.Chtimes(e.lock, old, old)
	if _, err := TryLock(e.state, e.opts()...); !errorsIsLocked(err) {
		t.Fatalf("TryLock over an empty record: %v", err)
	}
	if !ofdSupported {
		for _, dry := range []bool{true, false} {
			acts, err := Recover(e.state, dry, e.opts()...)
			if err != nil || len(acts) != 1 || acts[0].Kind != KindKeepLock || acts[0].Done ||
				!strings.Contains(acts[0].Evidence, "kept: ") || !strings.Contains(acts[0].Evidence, "rm "+e.lock) {
				t.Fatalf("Recover (dry run %v) without a kernel's answer: %+v %v", dry, acts, err)
			}
			t.Log(acts[0].Evidence)
		}
		if fi, err := os.Lstat(e.lock); err != nil || fi.Size() != 0 {
			t.Fatalf("the empty record was not kept: %v %v", fi, err)
		}
		os.Remove(e.lock) // what the evidence tells a person to do
		h, err := TryLock(e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		h.Unlock()
		return
	}
	acts, err := Recover(e.state, false, e.opts()...)
	if err != nil || len(acts) != 1 || acts[0].Kind != "remove-lock" || !acts[0].Done {
		t.Fatalf("Recover: %+v %v", acts, err)
	}
	t.Log(acts[0].Evidence)
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	h.Unlock()
}
