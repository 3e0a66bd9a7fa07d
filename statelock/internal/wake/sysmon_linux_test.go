//go:build !exactfs_portable

package wake

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
)

// piecesUpToForTest makes every sleep of the test one of pieces.
func piecesUpToForTest(t *testing.T) {
	was := piecesUpTo
	t.Cleanup(func() { piecesUpTo = was })
	piecesUpTo = time.Hour
}

// sleepingOn runs sleepOn(w, cur, an hour) in a goroutine and returns the
// channel closed when it returns.
func sleepingOn(w *uint32, cur uint32) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		sleepOn(w, cur, time.Hour, nil)
		close(done)
	}()
	return done
}

// ended fails the test unless done is closed within 30 s (a sleep of an
// hour that something should have ended).
func ended(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal(what + " did not end the sleep")
	}
}

// sleepOn sleeps its whole time in pieces, passing through the scheduler
// between them, and is not cut short by a piece's end.
func TestSleepOnSleepsWholeInPieces(t *testing.T) {
	yields := countYields(t)
	var w uint32 = 7
	d := 3*sleepPiece + time.Millisecond
	start := time.Now()
	sleepOn(&w, 7, d, nil)
	if got := time.Since(start); got < d {
		t.Fatalf("slept %v of %v", got, d)
	}
	// The first piece ends before the sleep does, and the first Breathe
	// since the reset yields (later ones may not, on a machine slow enough
	// to put less than breatheEvery between two piece ends).
	if *yields < 1 {
		t.Fatal("no yield between the pieces of a sleep of 4 pieces")
	}
}

// A wake in a later piece ends the sleep at once, as every wake of the
// mailbox comes: after a change of the word (a grant, a nudge, a ring;
// Interrupt sets the stop flag instead), so a wake that falls between two
// pieces is not lost either (the next piece's wait sees the change).
func TestSleepOnWokenInLaterPiece(t *testing.T) {
	piecesUpToForTest(t)
	var w uint32 = 1
	done := sleepingOn(&w, 1)
	time.Sleep(2*sleepPiece + sleepPiece/2)
	select {
	case <-done:
		t.Fatal("the sleep ended with nothing to end it")
	default:
	}
	atomic.StoreUint32(&w, 2)
	sys.FutexWake(&w, 1<<30)
	ended(t, done, "a change and a futex wake in the third piece")
}

// A changed word ends the sleep at the next piece at the latest (a change
// without a wake), and stop ends it before it starts.
func TestSleepOnChangedWordAndStop(t *testing.T) {
	piecesUpToForTest(t)
	var w uint32 = 1
	done := sleepingOn(&w, 1)
	time.Sleep(sleepPiece / 2)
	atomic.StoreUint32(&w, 2)
	ended(t, done, "a changed word")
	var stop atomic.Bool
	stop.Store(true)
	start := time.Now()
	sleepOn(&w, 2, 40*time.Second, &stop)
	if got := time.Since(start); got > 30*time.Second {
		t.Fatalf("a stopped sleep slept %v", got)
	}
}

// A sleep longer than piecesUpTo is one futex wait: no yield in it.
func TestSleepOnLongIsOneWait(t *testing.T) {
	yields := countYields(t)
	var w uint32 = 3
	d := piecesUpTo + 2*sleepPiece
	start := time.Now()
	sleepOn(&w, 3, d, nil)
	if got := time.Since(start); got < d {
		t.Fatalf("slept %v of %v", got, d)
	}
	if *yields != 0 {
		t.Fatalf("%d yields in a sleep of %v, longer than piecesUpTo (%v)", *yields, d, piecesUpTo)
	}
}

// Interrupt before Sleep: the Sleep returns at once, and the next one
// sleeps again.
func TestSeatInterruptBeforeSleep(t *testing.T) {
	d, _ := openDir(t)
	m := mustOpen(t, d)
	s, err := m.Take([]byte(`{"pid":1}`), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Leave()
	s.Sleep(0) // the word moved at Take: the first Sleep only notes it
	s.Interrupt()
	start := time.Now()
	s.Sleep(40 * time.Second)
	if got := time.Since(start); got > 30*time.Second {
		t.Fatalf("an interrupted seat slept %v", got)
	}
	start = time.Now()
	s.Sleep(2 * sleepPiece)
	if got := time.Since(start); got < 2*sleepPiece {
		t.Fatalf("the interrupt was not spent: the next sleep took %v of %v", got, 2*sleepPiece)
	}
}
