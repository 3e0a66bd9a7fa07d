//go:build !exactfs_portable

package wake

import (
	"testing"
	"time"
)

// A granter waiting for the next grant is woken by it, with a promise or
// without one (a reader's), and gives up at its bound when none comes; a
// directory fsync recorded as begun covers every tag issued before it and
// none after; one announced by a waiting granter covers the next tag.
func TestPairedFsyncWords(t *testing.T) {
	t.Parallel()
	d, _ := openDir(t)
	owner, waiter := mustOpen(t, d), mustOpen(t, d)

	s, g := grantTo(t, owner, waiter, `{"a":1}`)
	tag := g.Promise()
	seq := g.Seq()
	g.Done()
	s.Leave()
	if owner.AwaitNextGrant(seq, 30*time.Millisecond) {
		t.Fatal("AwaitNextGrant saw a grant nobody made")
	}
	if owner.DirSyncCovers(tag) {
		t.Fatal("no fsync began, yet the tag reads as covered")
	}

	woke := make(chan bool, 1)
	go func() { woke <- owner.AwaitNextGrant(seq, time.Minute) }()
	time.Sleep(20 * time.Millisecond) // asleep, most likely; either way it must see the grant
	s, g = grantTo(t, waiter, waiter, `{"b":1}`)
	g.NoPromise() // a reader's grant counts too
	g.Done()
	s.Leave()
	select {
	case ok := <-woke:
		if !ok {
			t.Fatal("AwaitNextGrant gave up although a grant was made")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a grant without a promise did not wake the granter waiting for it")
	}

	owner.DirSyncBegins()
	if !owner.DirSyncCovers(tag) {
		t.Fatal("an fsync begun after tag's rename does not cover it")
	}
	s, g = grantTo(t, owner, waiter, `{"c":1}`)
	later := g.Promise()
	g.Done()
	s.Leave()
	if owner.DirSyncCovers(later) {
		t.Fatal("an fsync begun before a tag was issued covers it")
	}

	// A granter about to wait for the next grant announces that its fsync
	// covers the next tag, and that one only.
	owner.CoverNext(later)
	if !owner.DirSyncCovers(later+1) || owner.DirSyncCovers(later+2) {
		t.Fatalf("after CoverNext(%d): covers %d: %v (want true), %d: %v (want false)",
			later, later+1, owner.DirSyncCovers(later+1), later+2, owner.DirSyncCovers(later+2))
	}
}
