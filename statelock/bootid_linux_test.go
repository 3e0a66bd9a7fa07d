package statelock

import (
	"testing"

	"github.com/exactfs/exactfs/liveness"
)

// TestBootIDWithoutKernelLock: a boot id is evidence for the pid rules
// whether or not its writer holds an OFD lock, as exactfs on macOS writes
// it (newOwner: the boot id and no other evidence field). A live holder's
// record with such a boot id of this boot is kept, and is not reported as
// kernel-attested; the same record with another boot's id is dead and
// reclaimed. On 20b7f43 Record.Kernel counted a boot id alone as a claim
// of a kernel lock: the judge asked the kernel about a lock nobody took,
// read "no lock" as dead, and Inspect called the live holder stale.
func TestBootIDWithoutKernelLock(t *testing.T) {
	self, err := liveness.Self()
	if err != nil || self.BootID == "" {
		t.Fatalf("this host's boot id: %q, %v", self.BootID, err)
	}
	pid := sleeper(t)
	record := func(e *testEnv, boot string) {
		r, err := ParseRecord(tsStyleRecord(t, pid, e.host.ID))
		if err != nil {
			t.Fatal(err)
		}
		r.BootID = boot
		writeRecord(t, e.lock, r.Encode())
	}

	t.Run("this boot", func(t *testing.T) {
		e := newEnv(t)
		record(e, self.BootID)
		st, err := Inspect(e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if st.Holder == nil || st.State != StateHeld {
			t.Fatalf("a live holder's record of this boot: %+v", st)
		}
		if st.Holder.Kernel {
			t.Errorf("a record with a boot id and no other evidence is reported as kernel-attested: %+v", st.Holder)
		}
		if h, err := TryLock(e.state, e.opts()...); err == nil {
			h.Unlock()
			t.Fatal("took the lock of a live holder of this boot")
		} else if !errorsIsLocked(err) {
			t.Fatal(err)
		}
	})
	t.Run("an earlier boot", func(t *testing.T) {
		e := newEnv(t)
		record(e, "0b5e6c3a-1111-2222-3333-444455556666")
		h, err := TryLock(e.state, e.opts()...)
		if err != nil {
			t.Fatalf("a record from an earlier boot is dead, whatever its pid: %v", err)
		}
		h.Unlock()
	})
}
