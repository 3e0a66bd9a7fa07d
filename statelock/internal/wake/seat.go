package wake

import (
	"encoding/binary"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/exactfs/exactfs/internal/sys"
)

// Mailbox is an open, trusted, mapped mailbox (Open).
type Mailbox struct {
	f        *os.File
	mem      []byte
	Dev, Ino uint64
	path     string
	reopen   func() (*os.File, error) // a second descriptor on the same inode (Open proved it)

	// spare holds seat descriptors that a Leave gave back, holding no lock
	// (see Leave), for the next Take of this process: opening one through
	// /proc costs an open, an fstat, the os.File's two registration calls
	// and a close per seated wait, a sixth of a contended cycle's system
	// calls. At most spareMax are kept; Close closes them.
	spareMu sync.Mutex
	spare   []*os.File
	closed  bool
}

// spareMax bounds the seat descriptors a mailbox keeps for reuse: one per
// goroutine of this process waiting on this lock at once, beyond which a
// Take opens a fresh one.
const spareMax = 4

// Close unmaps the mailbox and closes its descriptor (dropping any grant
// lock of this descriptor) and the seat descriptors kept for reuse.
func (m *Mailbox) Close() error {
	if m == nil {
		return nil
	}
	m.spareMu.Lock()
	m.closed = true
	for _, f := range m.spare {
		f.Close()
	}
	m.spare = nil
	m.spareMu.Unlock()
	sys.Munmap(m.mem)
	return m.f.Close()
}

// seatFile is a descriptor for a new seat: one a Leave gave back, or a
// new open file description of the mailbox's inode.
func (m *Mailbox) seatFile() (*os.File, error) {
	m.spareMu.Lock()
	if n := len(m.spare); n > 0 {
		f := m.spare[n-1]
		m.spare = m.spare[:n-1]
		m.spareMu.Unlock()
		return f, nil
	}
	m.spareMu.Unlock()
	return m.reopen()
}

// putSeatFile keeps f, which holds no lock, for the next Take, or closes
// it.
func (m *Mailbox) putSeatFile(f *os.File) {
	m.spareMu.Lock()
	if !m.closed && len(m.spare) < spareMax {
		m.spare = append(m.spare, f)
		f = nil
	}
	m.spareMu.Unlock()
	if f != nil {
		f.Close()
	}
}

// Spares is how many seat descriptors are kept for reuse (for tests).
func (m *Mailbox) Spares() int {
	m.spareMu.Lock()
	defer m.spareMu.Unlock()
	return len(m.spare)
}

// Path is the mailbox's path, for messages.
func (m *Mailbox) Path() string { return m.path }

func (m *Mailbox) wordAt(i int) *uint32 {
	return (*uint32)(unsafe.Pointer(&m.mem[i*SeatSize]))
}

func (m *Mailbox) seat(i int) []byte { return m.mem[i*SeatSize : (i+1)*SeatSize] }

// ticketOf reads seat i's ticket (written before the seat was WAITING).
func (m *Mailbox) ticketOf(i int) int64 {
	return int64(binary.LittleEndian.Uint64(m.seat(i)[8:16]))
}

// StateOf reads seat i's state (for tests and inspection).
func (m *Mailbox) StateOf(i int) State { return stateOf(atomic.LoadUint32(m.wordAt(i))) }

// Waiting counts the seats that are WAITING now (for tests and statistics).
func (m *Mailbox) Waiting() int {
	n := 0
	for i := range Seats {
		if m.StateOf(i) == Waiting {
			n++
		}
	}
	return n
}

// Yield asks every Go process not to take the lock over a tombstone
// before until (host monotonic nanoseconds): a reference contender (a
// TypeScript peer, which polls F.lock with its own backoff and cannot be
// seated) is given its turn. The deadline only moves later.
func (m *Mailbox) Yield(until int64) {
	atomic.StoreInt64((*int64)(unsafe.Pointer(&m.mem[Seats*SeatSize+8])), until)
	p := (*int64)(unsafe.Pointer(&m.mem[Seats*SeatSize]))
	for {
		old := atomic.LoadInt64(p)
		if old >= until || atomic.CompareAndSwapInt64(p, old, until) {
			return
		}
	}
}

// LastYield is when the last yield was asked to end (host monotonic
// nanoseconds; 0: never), kept when EndYield ends it early, so that
// owners can space yields out.
func (m *Mailbox) LastYield() int64 {
	return atomic.LoadInt64((*int64)(unsafe.Pointer(&m.mem[Seats*SeatSize+8])))
}

// EndYield ends the yield at once: the reference contender had its turn.
func (m *Mailbox) EndYield() {
	atomic.StoreInt64((*int64)(unsafe.Pointer(&m.mem[Seats*SeatSize])), 0)
}

// Yielding reports whether now (host monotonic nanoseconds) is before the
// yield deadline.
func (m *Mailbox) Yielding(now int64) bool {
	return now < atomic.LoadInt64((*int64)(unsafe.Pointer(&m.mem[Seats*SeatSize])))
}

// Seat is a waiter's place in the mailbox: its own descriptor on the
// mailbox, which holds the seat's lock byte, and the word it sleeps on.
type Seat struct {
	m    *Mailbox
	f    *os.File
	i    int
	rec  []byte
	last uint32 // the word as this waiter last saw it
	// intr is set by Interrupt: the next or current Sleep returns at once.
	intr atomic.Bool
}

// ErrNoSeat: every seat is taken, or the record does not fit in one.
var ErrNoSeat = errors.New("no free seat in the mailbox")

// Take seats a waiter: through a descriptor of its own it takes the first
// free seat's lock byte, marks the seat idle (a new sequence: a granter
// still busy with a dead occupant's seat fails every CAS from now on),
// writes rec and ticket, and stores WAITING. rec must be the exact bytes
// the waiter wants written into F.lock; it is copied.
func (m *Mailbox) Take(rec []byte, ticket int64) (*Seat, error) {
	if len(rec) == 0 || len(rec) > MaxRecord {
		return nil, ErrNoSeat
	}
	f, err := m.seatFile()
	if err != nil {
		return nil, err
	}
	fd := int(f.Fd())
	start := int(uint64(ticket) % Seats)
	for k := range Seats {
		i := (start + k) % Seats
		if err := sys.OFDTryLock(fd, int64(i), 1); err != nil {
			if errors.Is(err, sys.ErrUnsupported) {
				f.Close()
				return nil, err
			}
			continue
		}
		w := m.wordAt(i)
		for {
			old := atomic.LoadUint32(w)
			if atomic.CompareAndSwapUint32(w, old, next(old, Idle)) {
				break
			}
		}
		b := m.seat(i)
		binary.LittleEndian.PutUint32(b[4:8], uint32(len(rec)))
		binary.LittleEndian.PutUint64(b[8:16], uint64(ticket))
		copy(b[header:], rec)
		s := &Seat{m: m, f: f, i: i, rec: append([]byte(nil), rec...)}
		for {
			old := atomic.LoadUint32(w)
			nw := next(old, Waiting)
			if atomic.CompareAndSwapUint32(w, old, nw) {
				s.last = nw
				break
			}
		}
		return s, nil
	}
	m.putSeatFile(f) // it took no lock
	return nil, ErrNoSeat
}

// Index is the seat's number.
func (s *Seat) Index() int { return s.i }

// State is the seat's state now.
func (s *Seat) State() State { return stateOf(atomic.LoadUint32(s.m.wordAt(s.i))) }

// Sleep waits on the seat's word for at most d: until a granter or a nudge
// changes it from what this waiter last saw, d passes, or the word has
// changed already. It reports nothing: the caller looks at F.lock and the
// state again in every case.
func (s *Seat) Sleep(d time.Duration) {
	w := s.m.wordAt(s.i)
	cur := atomic.LoadUint32(w)
	if cur != s.last {
		s.last = cur
		return
	}
	sleepOn(w, cur, d, &s.intr)
	s.intr.Store(false)
	s.last = atomic.LoadUint32(w)
}

// Interrupt wakes the waiter sleeping on this seat (its word unchanged):
// its context ended, and it should look at once. One that is not asleep
// yet does not sleep at its next Sleep.
func (s *Seat) Interrupt() {
	s.intr.Store(true)
	sys.FutexWake(s.m.wordAt(s.i), 1<<30)
}

// Recover puts a seat that is GRANTING under a granter that is gone (no
// process holds its grant byte) back to WAITING, and reports whether it
// did. SPEC §4.8.2: a waiter stuck mid-grant when the granter dies goes
// back to waiting. The granter holds its byte from before its CAS to
// GRANTING until after its last CAS, so a free byte with the state still
// GRANTING means it died (the CAS fails if it finished meanwhile).
func (s *Seat) Recover() bool {
	w := s.m.wordAt(s.i)
	old := atomic.LoadUint32(w)
	if stateOf(old) != Granting {
		return false
	}
	if held, known := sys.OFDHeld(int(s.f.Fd()), GrantLockBase+int64(s.i), 1); held || !known {
		return false
	}
	return atomic.CompareAndSwapUint32(w, old, next(old, Waiting))
}

// Withdraw is a waiter giving up its place: WAITING to idle. false: a
// granter has it (GRANTING or GRANTED); the waiter must then learn the
// outcome (F.lock may be, or become, its record) before it leaves.
func (s *Seat) Withdraw() bool {
	w := s.m.wordAt(s.i)
	for {
		old := atomic.LoadUint32(w)
		switch stateOf(old) {
		case Granting, Granted:
			return false
		}
		if atomic.CompareAndSwapUint32(w, old, next(old, Idle)) {
			return true
		}
	}
}

// Leave ends the seat: idle, then the seat lock goes. Call it once, after
// Withdraw succeeded or after the grant was taken. The descriptor is kept
// for this process's next Take only when the unlock succeeded: it then
// holds no lock at all (a seat descriptor never takes any other), so a
// seat taken through it later is exactly as if freshly opened; otherwise
// it is closed, which drops the lock for certain.
func (s *Seat) Leave() {
	w := s.m.wordAt(s.i)
	for {
		old := atomic.LoadUint32(w)
		if atomic.CompareAndSwapUint32(w, old, next(old, Idle)) {
			break
		}
	}
	if sys.OFDUnlock(int(s.f.Fd()), int64(s.i), 1) != nil {
		s.f.Close()
		return
	}
	s.m.putSeatFile(s.f)
}

// Grant is an owner's hand-off in progress to one seat.
type Grant struct {
	m   *Mailbox
	i   int
	w   uint32 // the GRANTING word this grant set
	rec []byte
	seq uint32 // its number in the count of grants (pair.go)
}

// Grant picks the oldest WAITING seat whose waiter is alive (its seat lock
// held), takes the seat's grant byte, CASes it WAITING to GRANTING and
// copies the waiter's record bytes. nil: nobody to grant. skip lists seats
// this owner gave up on during this release (their waiter's slot lock was
// not where it must be).
func (m *Mailbox) Grant(skip func(i int) bool) *Grant {
	fd := int(m.f.Fd())
	var tried [Seats]bool
	for {
		best, bestT := -1, int64(0)
		for i := range Seats {
			if tried[i] || m.StateOf(i) != Waiting || (skip != nil && skip(i)) {
				continue
			}
			if t := m.ticketOf(i); best < 0 || t < bestT {
				best, bestT = i, t
			}
		}
		if best < 0 {
			return nil
		}
		if g := m.tryGrant(fd, best); g != nil {
			return g
		}
		tried[best] = true
	}
}

func (m *Mailbox) tryGrant(fd, i int) *Grant {
	if held, known := sys.OFDHeld(fd, int64(i), 1); !held || !known {
		return nil // its waiter is gone (or the kernel cannot tell)
	}
	if sys.OFDTryLock(fd, GrantLockBase+int64(i), 1) != nil {
		return nil
	}
	w := m.wordAt(i)
	old := atomic.LoadUint32(w)
	nw := next(old, Granting)
	if stateOf(old) != Waiting || !atomic.CompareAndSwapUint32(w, old, nw) {
		sys.OFDUnlock(fd, GrantLockBase+int64(i), 1)
		return nil
	}
	b := m.seat(i)
	n := binary.LittleEndian.Uint32(b[4:8])
	if n == 0 || n > MaxRecord {
		g := &Grant{m: m, i: i, w: nw}
		g.Cancel()
		return nil
	}
	return &Grant{m: m, i: i, w: nw, rec: append([]byte(nil), b[header:header+int(n)]...)}
}

// Seat is the seat being granted.
func (g *Grant) Seat() int { return g.i }

// Record is the waiter's record bytes, as copied at the CAS.
func (g *Grant) Record() []byte { return g.rec }

// Cancel gives the seat back (GRANTING to WAITING) without writing: the
// waiter's slot lock was not where it must be. Its grant byte goes.
func (g *Grant) Cancel() {
	w := g.m.wordAt(g.i)
	atomic.CompareAndSwapUint32(w, g.w, next(g.w, Waiting))
	sys.OFDUnlock(int(g.m.f.Fd()), GrantLockBase+int64(g.i), 1)
}

// Done marks the grant made (GRANTING to GRANTED: the record is in F.lock),
// drops the grant byte and wakes the waiter.
func (g *Grant) Done() {
	w := g.m.wordAt(g.i)
	atomic.CompareAndSwapUint32(w, g.w, next(g.w, Granted))
	sys.OFDUnlock(int(g.m.f.Fd()), GrantLockBase+int64(g.i), 1)
	sys.FutexWake(w, 1<<30)
}

// Nudge wakes the oldest WAITING waiter without granting it (its word's
// sequence moves on, so a waiter about to sleep does not): an owner that
// released the reference way tells the first waiter to attempt at once.
func (m *Mailbox) Nudge() bool {
	best, bestT := -1, int64(0)
	for i := range Seats {
		if m.StateOf(i) != Waiting {
			continue
		}
		if t := m.ticketOf(i); best < 0 || t < bestT {
			best, bestT = i, t
		}
	}
	if best < 0 {
		return false
	}
	w := m.wordAt(best)
	old := atomic.LoadUint32(w)
	if stateOf(old) != Waiting || !atomic.CompareAndSwapUint32(w, old, next(old, Waiting)) {
		return false
	}
	sys.FutexWake(w, 1<<30)
	return true
}

// bell is the header word a sticky owner (SPEC §4.8.3: a Go owner that
// keeps F.lock for a moment after its caller's release) sleeps on.
func (m *Mailbox) bell() *uint32 {
	return (*uint32)(unsafe.Pointer(&m.mem[Seats*SeatSize+16]))
}

// Ring tells a sticky owner that a waiter has just been seated: the bell
// moves on and whoever sleeps on it (BellWait) is woken, so the owner
// hands the lock over at once instead of keeping it for the rest of its
// idle time. A waiter rings after its seat is WAITING.
//
// The futex wake, a system call, is made only when an owner says it
// sleeps on the bell (BellWait counts itself in and out): a seated waiter
// rings at every seating, and an owner is rarely asleep there (with
// waiters queued, a release hands over instead of keeping). Both sides use
// sequentially consistent atomics: either this ring sees the sleeper's
// count, or the sleeper's look at the bell, after its count, sees this
// ring and does not sleep. A sleeper killed while counted leaves the
// count up, which only makes every later ring wake (as without the count).
func (m *Mailbox) Ring() {
	atomic.AddUint32(m.bell(), 1)
	if atomic.LoadUint32(m.bellSleepers()) != 0 {
		sys.FutexWake(m.bell(), 1<<30)
	}
}

// bellSleepers is the header word counting the owners in BellWait.
func (m *Mailbox) bellSleepers() *uint32 {
	return (*uint32)(unsafe.Pointer(&m.mem[Seats*SeatSize+20]))
}

// Bell reads the bell; the owner reads it before it looks for WAITING
// seats, and sleeps on that value, so a ring between its look and its
// sleep is never lost.
func (m *Mailbox) Bell() uint32 { return atomic.LoadUint32(m.bell()) }

// BellWait sleeps until the bell is no longer seen, or d passes.
func (m *Mailbox) BellWait(seen uint32, d time.Duration) {
	atomic.AddUint32(m.bellSleepers(), 1)
	defer atomic.AddUint32(m.bellSleepers(), ^uint32(0))
	if atomic.LoadUint32(m.bell()) != seen {
		return
	}
	sleepOn(m.bell(), seen, d, nil)
}
