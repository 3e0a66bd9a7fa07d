//go:build !exactfs_portable

package wake

import (
	"sync/atomic"
	"testing"
	"time"
)

// grantTo seats rec in waiter's mailbox and has owner grant it.
func grantTo(t *testing.T, owner, waiter *Mailbox, rec string) (*Seat, *Grant) {
	t.Helper()
	s, err := waiter.Take([]byte(rec), 1)
	if err != nil {
		t.Fatal(err)
	}
	g := owner.Grant(nil)
	if g == nil || g.Seat() != s.Index() {
		t.Fatalf("grant %+v for seat %d", g, s.Index())
	}
	return s, g
}

// A grant's promise is read by its own grantee only: a promise left by an
// earlier grant (an older build's granter writes none, so the header still
// holds the last newer granter's) names another GRANTED word and reads as
// none, as does a grant whose granter cleared it (NoPromise) or a seat
// that is not GRANTED.
func TestPromiseIsItsOwnGrantsOnly(t *testing.T) {
	t.Parallel()
	d, _ := openDir(t)
	owner, waiter := mustOpen(t, d), mustOpen(t, d)

	s, g := grantTo(t, owner, waiter, `{"a":1}`)
	if s.Promised() != 0 {
		t.Fatal("a GRANTING seat read a promise")
	}
	tag := g.Promise()
	if tag == 0 {
		t.Fatal("a promise of tag 0")
	}
	if s.Promised() != 0 {
		t.Fatal("the promise was read before GRANTED")
	}
	g.Done()
	if got := s.Promised(); got != tag {
		t.Fatalf("Promised() = %d, want %d", got, tag)
	}
	s.Leave()

	// The next grant's granter makes no promise and does not clear the
	// header (as an older build): the stale promise is not this grant's.
	s, g = grantTo(t, owner, waiter, `{"b":1}`)
	g.Done()
	if got := s.Promised(); got != 0 {
		t.Fatalf("a grant without a promise read the last grant's (%d)", got)
	}
	s.Leave()

	// NoPromise clears it.
	s, g = grantTo(t, owner, waiter, `{"c":1}`)
	g.Promise()
	g.NoPromise()
	g.Done()
	if got := s.Promised(); got != 0 {
		t.Fatalf("a cleared promise read as %d", got)
	}
	s.Leave()
	if got := s.Promised(); got != 0 {
		t.Fatalf("an idle seat read a promise (%d)", got)
	}
}

// A tag is done when it or a later one is marked (the later fsync began
// after the earlier rename), across the counter's wrap; WaitSynced returns
// at once for a done tag, is woken by the mark of its own or a later one,
// and gives up when its time is up.
func TestSyncDoneCoversEarlierTags(t *testing.T) {
	for _, c := range []struct{ done, t uint32 }{{5, 5}, {6, 5}, {1, ^uint32(0)}, {3, ^uint32(1)}} {
		if !reached(c.done, c.t) {
			t.Errorf("done %d does not cover %d", c.done, c.t)
		}
	}
	for _, c := range []struct{ done, t uint32 }{{4, 5}, {^uint32(0), 1}, {0, 7}} {
		if reached(c.done, c.t) {
			t.Errorf("done %d covers %d", c.done, c.t)
		}
	}

	d, _ := openDir(t)
	m := mustOpen(t, d)
	m.SyncDone(7)
	m.SyncDone(6) // never moves back
	if !m.WaitSynced(6, 0) || !m.WaitSynced(7, 0) {
		t.Fatal("a marked tag, or an earlier one, is not done")
	}
	if m.WaitSynced(8, 20*time.Millisecond) {
		t.Fatal("an unmarked tag is done")
	}
	got := make(chan bool, 1)
	go func() { got <- m.WaitSynced(9, 10*time.Second) }()
	for start := time.Now(); loadSleepers(m) == 0; {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the waiter never slept")
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	m.SyncDone(10)
	if !<-got {
		t.Fatal("the mark of a later tag did not end the wait")
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("the waiter was not woken by the mark (%s)", waited)
	}
}

func loadSleepers(m *Mailbox) uint32 { return atomic.LoadUint32(m.syncSleepers()) }
