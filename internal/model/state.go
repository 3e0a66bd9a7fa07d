package model

import (
	"fmt"
	"strings"
)

// Kind is the implementation a modelled process runs.
type Kind uint8

const (
	// Cohort is a Go process with the SPEC §4.8 cohort on: kernel slot,
	// mailbox, direct hand-off, sticky ownership, claims that leave the
	// sidecar a tombstone.
	Cohort Kind = iota
	// Ref is a Go process on the reference path (§4.8 item 5: no OFD locks
	// on this filesystem, or the cohort off): claims with its record in the
	// sidecar, judged by pid, no hand-off.
	Ref
	// TS is the TypeScript reference (seed 003) as it is.
	TS
	// Old is today's exactfs (before §4.8) on the same directory: the
	// reference path with §4.7's kernel-attested ownership (an OFD lock
	// on its record's inode, and on the sidecar while it holds a claim),
	// judging any record that carries locks by "any lock on the inode"
	// (the whole holder range, which contains every slot byte), its
	// record in the sidecar, released without an fsync before the rmdir.
	Old
)

func (k Kind) String() string {
	switch k {
	case Cohort:
		return "go-cohort"
	case Ref:
		return "go-ref"
	case TS:
		return "ts"
	case Old:
		return "go-old"
	}
	return "?"
}

// Record kinds: what the bytes of an owner record or sidecar say.
const (
	kAbsent uint8 = iota
	kTomb         // released tombstone (any writer)
	kLive         // the live record of one incarnation of one process
	kTorn         // empty or torn: a writer between truncate/create and write
	// kMix is what a reader sees while a hand-off's pwrite copies the
	// waiter's bytes over the owner's (§4.8.2c): a mix of both, which may
	// parse, naming a garbled pid or slot (protocol-perf §4.1b point 3).
	// It exists only between the pwrite's start and end (gPwEnd); a crash
	// there completes the copy (one page, already in the page cache).
	kMix
)

// rec is the content of a record file. Two writes of the "same" record
// differ by the inode's version (the reference's snapshot compares size,
// mtime and SHA-256; a fresh token makes every write distinct).
type rec struct {
	k   uint8
	who uint8 // process index of the writer (the owner, for kLive)
	inc uint8 // incarnation of that process (a restart is a new pid)
}

// inode is one F.lock inode: content and a write counter (a capture is
// the pair (inode, version); any write changes the version).
type inode struct {
	c   rec
	ver uint8
}

// Mailbox slot states (§4.8 item 2; protocol-perf §4.1).
const (
	mIdle uint8 = iota
	mWaiting
	mGranting
	mGranted
)

var mailNames = [...]string{"idle", "waiting", "granting", "granted"}

const (
	maxP   = 4
	maxIno = 5
)

// proc is one process: its program counter, its kernel locks, its mailbox
// slot and its registers (descriptors and snapshots it holds).
type proc struct {
	pc    uint8
	dead  bool
	fail  bool // a TypeScript operation failed (fatal case reached)
	inc   uint8
	done  uint8 // completed critical sections
	noSt  bool  // sticky time is over (or a claim was seen): this cycle's release gives the lock up
	once  bool  // this release makes one attempt at the claim; busy: keep F.lock and retry
	retry bool  // kept because a release found the claim busy: released again, never re-locked
	yld   bool  // this release yielded the tombstone to a reference contender
	slotI uint8 // inode on which this process holds its kernel slot lock (0 none)
	sideL bool  // holds its kernel lock on the sidecar (cohort claim)
	mail  uint8 // mailbox slot state
	mRec  rec   // the bytes it published in the mailbox
	mBy   uint8 // granter index+1 while granting
	mByI  uint8 // and the granter's incarnation
	ino   uint8 // captured inode / descriptor
	ver   uint8 // captured (or written) version of ino
	hIno  uint8 // inode of the record it owns
	hVer  uint8 // version it wrote there
	sSnap uint8 // sidecar version it captured or wrote
	dSnap uint8 // claim directory identity it judged
	after uint8 // pc to run once the claim is taken
	next  uint8 // pc to run once the claim is released
	tgt   uint8 // waiter index+1 being granted
	gRec  rec   // the waiter's bytes, read from its mailbox slot once, at the CAS
}

// State is the whole modelled world. It is comparable, so it is its own
// hash key.
type State struct {
	lock     uint8 // inode F.lock names, 0 when absent
	ino      [maxIno + 1]inode
	dir      uint8 // identity of F.lock.transition/, 0 when absent
	maker    uint8 // ghost: index+1 of the process that made dir
	makerInc uint8 // ghost: and its incarnation
	side     rec   // F.lock.transition.owner content
	sideVer  uint8
	durSide  rec  // what a power cut keeps of the sidecar
	durDir   bool // what a power cut keeps of the claim directory
	cut      bool // a power cut happened (and the machine rebooted)
	cutT1    bool // at the cut: no claim directory, sidecar a Go record
	oldDir   bool // the claim directory was made before the current boot
	lost     bool // a detached F.lock could not be put back: its name was taken
	// yield: Go cohort takers leave a tombstone to a reference contender
	// (the mailbox's yield, handoff.go); it ends when a reference
	// holder's record is seen in F.lock, or when its window runs out.
	yield bool
	// badRelock (ghost): a sticky re-lock proceeded while F.lock did not
	// name and hold exactly the kept record.
	badRelock bool
	// yieldBroken (ghost): a release that yielded to a reference
	// contender handed F.lock to a Go process (a grant or a re-lock).
	yieldBroken bool
	crashes     uint8
	restart     uint8
	p           [maxP]proc
}

func (r rec) String() string {
	switch r.k {
	case kAbsent:
		return "absent"
	case kTomb:
		return "tombstone"
	case kLive:
		return fmt.Sprintf("live record of P%d.%d", r.who, r.inc)
	case kTorn:
		return fmt.Sprintf("torn(by P%d)", r.who)
	case kMix:
		return fmt.Sprintf("mid-pwrite(P%d's bytes going in)", r.who)
	}
	return "?"
}

// lockString names what F.lock is: absent, or its inode and content.
func (m *Model) lockString(s *State) string {
	if s.lock == 0 {
		return "absent"
	}
	return fmt.Sprintf("i%d[%s]", s.lock, s.ino[s.lock].c)
}

func (m *Model) render(s *State) string {
	var b strings.Builder
	if s.lock == 0 {
		b.WriteString("F.lock=absent")
	} else {
		fmt.Fprintf(&b, "F.lock=i%d[%s]", s.lock, s.ino[s.lock].c)
	}
	for i := 1; i <= maxIno; i++ {
		if uint8(i) != s.lock && s.ino[i].c.k != kAbsent {
			fmt.Fprintf(&b, " detached i%d[%s]", i, s.ino[i].c)
		}
	}
	if s.dir != 0 {
		fmt.Fprintf(&b, " claim=d%d(made by P%d)", s.dir, s.maker-1)
	} else {
		b.WriteString(" claim=none")
	}
	fmt.Fprintf(&b, " sidecar=[%s]", s.side)
	if s.oldDir {
		b.WriteString(" (claim made before this boot)")
	}
	if m.cfg.PowerCut && !s.cut {
		fmt.Fprintf(&b, " durable{claim=%v sidecar=%s}", s.durDir, s.durSide)
	}
	if s.cut {
		b.WriteString(" [after the power cut]")
	}
	if s.yield {
		b.WriteString(" [Go yields the tombstone]")
	}
	for i := range m.cfg.Procs {
		p := &s.p[i]
		fmt.Fprintf(&b, "\n      P%d.%d %-9s %-14s done=%d", i, p.inc, m.cfg.Procs[i], pcNames[p.pc], p.done)
		if p.dead {
			b.WriteString(" DEAD")
		}
		if p.fail {
			b.WriteString(" FAILED")
		}
		if p.slotI != 0 {
			fmt.Fprintf(&b, " slot%d@i%d", m.slotNum(uint8(i), p.inc), p.slotI)
		}
		if p.sideL {
			b.WriteString(" sidecar-lock")
		}
		if p.mail != mIdle {
			fmt.Fprintf(&b, " mailbox=%s", mailNames[p.mail])
		}
		if p.hIno != 0 {
			fmt.Fprintf(&b, " holds=i%d", p.hIno)
		}
	}
	return b.String()
}

// canon renumbers versions: only equality between an object's current
// version and the snapshots processes hold of it matters, so the current
// version becomes 1 and each distinct held snapshot 2, 3, ... in process
// order. Unreferenced detached inodes are forgotten.
func (m *Model) canon(s *State) {
	var vals [8]uint8
	for id := uint8(1); id <= maxIno; id++ {
		ref := s.lock == id
		for i := range m.cfg.Procs {
			q := &s.p[i]
			if q.ino == id || q.hIno == id || q.slotI == id {
				ref = true
			}
		}
		if !ref {
			s.ino[id] = inode{}
			continue
		}
		n := 0
		vals[n] = s.ino[id].ver
		n++
		get := func(v uint8) uint8 {
			if v == 0 {
				return 0
			}
			for k := 0; k < n; k++ {
				if vals[k] == v {
					return uint8(k + 1)
				}
			}
			vals[n] = v
			n++
			return uint8(n)
		}
		s.ino[id].ver = get(s.ino[id].ver)
		for i := range m.cfg.Procs {
			q := &s.p[i]
			if q.ino == id {
				q.ver = get(q.ver)
			}
			if q.hIno == id {
				q.hVer = get(q.hVer)
			}
		}
	}
	n := 0
	vals[n] = s.sideVer
	n++
	get := func(v uint8) uint8 {
		if v == 0 {
			return 0
		}
		for k := 0; k < n; k++ {
			if vals[k] == v {
				return uint8(k + 1)
			}
		}
		vals[n] = v
		n++
		return uint8(n)
	}
	s.sideVer = get(s.sideVer)
	for i := range m.cfg.Procs {
		s.p[i].sSnap = get(s.p[i].sSnap)
	}
}
