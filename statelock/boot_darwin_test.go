package statelock

import (
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/liveness"
)

// TestDarwinBoot: the power-loss rule has a boot time on macOS
// (kern.boottime) and keeps its slack; the records this process writes
// carry the boot id (kern.bootsessionuuid) though it holds no OFD lock,
// and claim no kernel lock.
func TestDarwinBoot(t *testing.T) {
	id, start, err := sys.BootSession()
	if err != nil {
		t.Fatal(err)
	}
	_, bootSlack, err := liveness.BootTime()
	if err != nil {
		t.Fatal(err)
	}
	if bootSlack != time.Minute {
		t.Errorf("the slack of kern.boottime is %s, not a minute", bootSlack)
	}
	if before, ok := writtenBeforeBoot(start.Add(-2 * bootSlack).UnixNano()); !ok || !before {
		t.Errorf("a record written %s before the boot (%s): before=%v ok=%v", 2*bootSlack, start, before, ok)
	}
	if before, ok := writtenBeforeBoot(start.Add(-bootSlack / 2).UnixNano()); !ok || before {
		t.Errorf("a record written within the slack of the boot (%s): before=%v ok=%v", start, before, ok)
	}
	if before, _ := writtenBeforeBoot(time.Now().UnixNano()); before {
		t.Error("a record written now reads as written before the boot")
	}
	e := newEnv(t)
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Unlock()
	r, err := ParseRecord(mustRead(t, e.lock))
	if err != nil {
		t.Fatal(err)
	}
	if self, _ := liveness.Self(); r.BootID != id || self.BootID != id {
		t.Errorf("the record's boot id is %q, liveness says %q, kern.bootsessionuuid %q", r.BootID, self.BootID, id)
	}
	if r.Kernel() {
		t.Errorf("a record written without an OFD lock claims one: %+v", r)
	}
}
