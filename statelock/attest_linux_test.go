//go:build !exactfs_portable

package statelock

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs/liveness"
)

// The holder's OFD lock and the waiters' queue share one inode, and
// kernelVerdict asks liveness.Attested about the holder's range: the
// holder's lock must read as alive there, and a queued waiter's lock,
// above queueBase, must not (a dead holder with live waiters is dead).
func TestAttestationCoversTheHolderRangeOnly(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rec")
	holder, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	waiter, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer waiter.Close()
	probe, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close()
	if err := ofdLock(holder); err != nil {
		t.Skipf("no OFD locks here: %v", err)
	}
	if !testQueue.Join(int(waiter.Fd()), 1234) {
		t.Fatal("the waiter could not queue")
	}
	if j, ok := liveness.Attested(probe); !ok || j.Verdict != liveness.Alive {
		t.Fatalf("holder and waiter: %v %v, want alive", j, ok)
	}
	holder.Close()
	if j, ok := liveness.Attested(probe); !ok || j.Verdict != liveness.Dead {
		t.Fatalf("waiter only: %v %v, want dead (the attestation must not cover the queue at queueBase+ticket)", j, ok)
	}
}
