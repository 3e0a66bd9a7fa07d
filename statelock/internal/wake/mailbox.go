package wake

import (
	"errors"
	"fmt"
	"time"
)

// Layout of the mailbox file: Seats seats of SeatSize bytes, then one more
// SeatSize block, the header. A seat is its state word (uint32 at 0), the
// length of its record (uint32 at 4), its ticket (int64 at 8) and the
// record bytes (from 16). The header holds the yield deadline (int64 at 0,
// host monotonic nanoseconds, see Yield), the last one asked (at 8) and the
// owner's bell (uint32 at 16, see Ring) with the count of owners asleep on
// it (uint32 at 20), then the words of the readers' rule (from 24, see
// sync.go) and of paired directory fsyncs (from 44, see pair.go). An older
// build leaves the bell alone: its waiters never ring, and a sticky owner
// then serves them when its idle time is up, as it would without the
// bell; an older sticky owner does not count itself, so a newer waiter's
// ring does not wake it, and it serves that waiter at its idle time
// (2 ms) in the same way.
const (
	Seats     = 63
	SeatSize  = 512
	Size      = (Seats + 1) * SeatSize
	header    = 16
	MaxRecord = SeatSize - header
	// GrantLockBase is where the granters' lock bytes begin (beyond the
	// file's end: OFD locks need no bytes under them). Byte i is seat i's
	// seat lock.
	GrantLockBase = 1 << 20
)

// State is a seat's state (the low two bits of its word).
type State uint32

const (
	Idle State = iota
	Waiting
	Granting
	Granted
)

func (s State) String() string {
	return [...]string{"idle", "WAITING", "GRANTING", "GRANTED"}[s&3]
}

// Prefix starts the mailbox's private name: the reference skips every
// ".gjc-delete-*" name when it scans a directory (SPEC §2.7).
const Prefix = ".gjc-delete-state-lock-mailbox-"

// Name is the mailbox's name beside the lock file lockName; ok is false when
// it does not fit in a directory entry (then there is no mailbox, and
// waiters wait the reference way).
func Name(lockName string) (string, bool) {
	n := Prefix + lockName
	return n, len(n) <= 255
}

// ErrUnusable is what every refusal of Open wraps: the mailbox is not used
// (and never written); the caller waits the reference way.
var ErrUnusable = errors.New("the Go cohort's mailbox is not usable")

// unusable is Open's refusal: what was found, where, and why it is not used.
type unusable struct {
	path, why string
}

func (e *unusable) Error() string {
	return fmt.Sprintf("%s: %s: %s (remove it, or leave it: waiters then use the reference protocol)", e.path, ErrUnusable, e.why)
}
func (e *unusable) Unwrap() error { return ErrUnusable }

// word packs a state and a sequence number.
func word(s State, seq uint32) uint32 { return seq<<2 | uint32(s) }

func stateOf(w uint32) State { return State(w & 3) }

// next is the word after w with state s: the sequence moves on.
func next(w uint32, s State) uint32 { return word(s, w>>2+1) }

// DefaultPoll bounds one futex sleep of a waiter: a lost wake, a granter
// that died, or a holder that released the reference way without nudging
// (an older exactfs) costs at most this.
const DefaultPoll = 20 * time.Millisecond
