package model

// Program counters. Each names the next atomic step of a process; the
// comment says which SPEC rule and which statelock function (or seed
// function, for TypeScript) it stands for.
const (
	// Go (cohort and reference path).
	gLook       uint8 = iota // capture F.lock without the claim and route (lock.go look/peek)
	gClaim                   // mkdir F.lock.transition (cohort: + kernel lock on the sidecar); or inspect a claim in the way (claim.go takeClaim/inspectClaim)
	gClEntomb                // stale claim: sidecar still as judged, rewrite a dead one to a tombstone, fsync (claim.go sidecarStill/entombSidecar)
	gClRemove                // stale claim: exact tree removal of the judged directory (claim.go reclaimStaleClaim)
	gClDurable               // reference path: fsync the directory, so the claim directory is durable before our record goes into the sidecar (claim.go claimDurable, called by reuseReleased and takeClaim)
	gSideUnlink              // BAD variant only: exact unlink of a dead sidecar under a fresh claim (take.go takeRecord -> reclaimRecord today)
	gSideCreate              // BAD variant only: create the sidecar again and write it (take.go createRecord)
	gRefSide                 // reference path: write our record into the sidecar over its tombstone (claim.go takeRecord/reuseSidecar)
	gTake                    // under the claim: create F.lock whole, or rewrite its tombstone in place (take.go takeRecord/takeTombstone, reuse.go reuseTombstone); slot lock first
	gRCap                    // under the claim: capture F.lock for a stale reclaim (take.go reclaimRecord)
	gRJudge                  // judge the captured record (judge.go: slot lock through the descriptor; pid for others)
	gRUnlink                 // exact unlink of the judged snapshot (take.go reclaimRecord via liveness.Removal)
	gRVerify                 // exact unlink of a torn read: the detached inode verified again; delete it or put it back (unlink.go)
	gRelProve                // under the claim: our record is still exactly ours -> tombstone in place, drop slot (lock.go Held.unlock)
	gCRel                    // release the claim (claim.go releaseClaim): cohort: rmdir + drop sidecar lock; ref: sidecar -> tombstone, fsync
	gCRmdir                  // ref: rmdir the claim directory
	gPub                     // waiter: publish its exact record bytes in its mailbox slot, state WAITING
	gSlot                    // waiter: take its kernel slot lock on the inode it captured (+ queue ticket)
	gWait                    // waiter: verify a grant / recover from a dead granter / withdraw
	gCS                      // critical section (caller's operation)
	gRel                     // owner: choose hand-off (CAS a waiter WAITING->GRANTING), sticky, or reference release
	gCheck                   // owner: F_OFD_GETLK: the waiter's slot lock is held on our inode (§4.8.2b)
	gPwTomb                  // BAD variant 3 only: release to a tombstone before the waiter's record
	gPwrite                  // owner: one pwrite of the waiter's bytes, padded (§4.8.2c): the copy starts
	gPwEnd                   // owner: the same pwrite's copy ends (a reader between the two sees a mix)
	gGranted                 // owner: lstat (still this inode, §4.8.2d), drop own slot, store GRANTED, wake
	gSticky                  // owner keeps F.lock between critical sections (§4.8.3)
	gFin                     // all acquisitions done

	// TypeScript reference (seed 003).
	tMkdir   // withLockPathTransition: mkdir the claim (a claim in the way: nothing, sleep, retry)
	tSCap    // acquireOwnerLock(sidecar): capture; tombstone -> prove + truncate (rewriteHeldOwnerRecord); else EEXIST = T1 fatal
	tSWrite  // write our record into the sidecar, truncate, fsync
	tSRecap  // re-capture the sidecar: exactly our bytes, else T4 fatal
	tAcq     // acquireOwnerLock(F.lock): create (O_EXCL, empty) or prove+truncate a tombstone, else contention
	tACWrite // createOwnerLock: write our record into the inode just created
	tAWrite  // rewriteHeldOwnerRecord: write our record over the truncated tombstone
	tARecap  // re-capture F.lock: same inode, exactly our bytes, else T4 fatal
	tCRel    // releaseTransitionClaim: sidecar still ours -> prove + truncate, else fatal
	tCRWrite // write the sidecar tombstone, fsync
	tCRRmdir // re-capture the sidecar tombstone (else fatal), rmdir the claim
	tLstat   // reclaimStaleSessionStateLock: lstat F.lock; absent -> retry
	tRCap    // reclaimStaleOwnerRecord: capture
	tRJudge  // lockOwnerIsAlive: host id, kill(pid,0), start time
	tRUnlink // re-capture identical, then exact unlink of that snapshot
	tRVerify // exact unlink of a torn read: the detached inode verified again; delete it or put it back (native exactUnlink)
	tCS      // critical section
	tRel     // releaseOwnerLock under the claim: capture == held, prove, truncate
	tLWrite  // write the tombstone, fsync
	tLRecap  // re-capture: same inode, our tombstone or a valid live successor; else fatal
	tFin     // all acquisitions done
	tFailed  // the TypeScript operation failed (a fatal case)
	numPC
)

var pcNames = [numPC]string{
	gLook: "look", gClaim: "claim", gClEntomb: "claim-entomb", gClRemove: "claim-remove", gClDurable: "claim-durable", gSideUnlink: "sidecar-unlink", gSideCreate: "sidecar-create", gRefSide: "ref-sidecar",
	gTake: "take", gRCap: "reclaim-capture", gRJudge: "reclaim-judge", gRUnlink: "reclaim-unlink", gRVerify: "reclaim-verify",
	gRelProve: "release-prove", gCRel: "claim-release", gCRmdir: "claim-rmdir", gPub: "wait-publish",
	gSlot: "wait-slot", gWait: "waiting", gCS: "CRITICAL", gRel: "release", gCheck: "grant-check",
	gPwTomb: "grant-tombstone", gPwrite: "grant-pwrite", gPwEnd: "grant-pwrite-end", gGranted: "grant-done", gSticky: "sticky", gFin: "finished",
	tMkdir: "claim-mkdir", tSCap: "sidecar-capture", tSWrite: "sidecar-write", tSRecap: "sidecar-recapture",
	tAcq: "acquire", tACWrite: "create-write", tAWrite: "rewrite-write", tARecap: "rewrite-recapture",
	tCRel: "claim-release", tCRWrite: "claim-tombstone", tCRRmdir: "claim-rmdir", tLstat: "lstat",
	tRCap: "reclaim-capture", tRJudge: "reclaim-judge", tRUnlink: "reclaim-unlink", tRVerify: "reclaim-verify", tCS: "CRITICAL",
	tRel: "release", tLWrite: "release-write", tLRecap: "release-recapture", tFin: "finished", tFailed: "FAILED",
}

// slotNum is the kernel slot number (byte 2^39+N) of one incarnation of
// one process. SPEC §4.8.1: unique per process for the life of the boot.
// BAD variant SlotReuse numbers slots by process position instead, so a
// restarted process takes its dead predecessor's number.
func (m *Model) slotNum(who, inc uint8) uint8 {
	if m.cfg.Bugs&BugSlotReuse != 0 {
		return who + 1
	}
	return who*8 + inc + 1
}

func aliveInc(s *State, who, inc uint8) bool {
	p := &s.p[who]
	return !p.dead && p.inc == inc
}

// slotHeld: does some live process hold the kernel slot lock N on inode
// ino? (F_OFD_GETLK at byte 2^39+N through a descriptor of that inode.)
// An older exactfs owner's lock covers the whole holder range, so it
// answers for every slot byte.
func (m *Model) slotHeld(s *State, ino, n uint8) bool {
	for i, k := range m.cfg.Procs {
		q := &s.p[i]
		if q.dead || q.slotI != ino {
			continue
		}
		if k == Old || m.slotNum(uint8(i), q.inc) == n {
			return true
		}
	}
	return false
}

// anyLock: does some live process hold any lock in the holder range of
// inode ino? (An older exactfs judge's question, and everyone's for a
// record without ofd_slot.)
func (m *Model) anyLock(s *State, ino uint8) bool {
	for i := range m.cfg.Procs {
		if q := &s.p[i]; !q.dead && q.slotI == ino {
			return true
		}
	}
	return false
}

// midWrite: a live process holds a writable descriptor on F.lock inode
// ino while its record there is incomplete (the read-lease probe of the
// abandoned-write rule, SPEC §4.4).
func (m *Model) midWrite(s *State, ino uint8) bool {
	for i := range m.cfg.Procs {
		q := &s.p[i]
		if !q.dead && q.ino == ino && (q.pc == tACWrite || q.pc == tAWrite) {
			return true
		}
		if !q.dead && q.hIno == ino && q.pc == tLWrite {
			return true
		}
	}
	return false
}

func (m *Model) sideMidWrite(s *State) bool {
	for i := range m.cfg.Procs {
		q := &s.p[i]
		if !q.dead && (q.pc == tSWrite || q.pc == tCRWrite) {
			return true
		}
	}
	return false
}

// goDead is a Go judge's verdict on F.lock inode ino holding c (judge.go):
// a cohort record by its slot lock, a reference-path or TypeScript record
// by pid and start time, a torn record by the abandoned-write rule.
func (m *Model) goDead(s *State, judge Kind, ino uint8, c rec) bool {
	switch c.k {
	case kLive:
		switch w := m.cfg.Procs[c.who]; {
		case w == Old || (w == Cohort && judge == Old):
			return !m.anyLock(s, ino)
		case w == Cohort:
			return !m.slotHeld(s, ino, m.slotNum(c.who, c.inc))
		}
		return !aliveInc(s, c.who, c.inc)
	case kTorn:
		return !m.midWrite(s, ino)
	}
	return false
}

// claimAttested is sticky.go's claimAttested: the claim directory is a Go
// taker's, its kernel lock on the sidecar visible. That taker is a Go
// process attempting, not a reference contender polling, so a release
// that sees it yields to nobody (it still releases the reference way).
func (m *Model) claimAttested(s *State) bool {
	if s.dir == 0 {
		return false
	}
	for i := range m.cfg.Procs {
		if !s.p[i].dead && s.p[i].sideL {
			return true
		}
	}
	return false
}

// claimStale is inspectClaim's verdict (SPEC §4.3). Timing is abstracted:
// "younger than 1 s" and "tombstone younger than 1 s" are read as "its
// taker is still alive" (a live taker finishes its claim bookkeeping in
// microseconds; the age rules exist only to wait for it).
func (m *Model) claimStale(s *State) bool {
	if s.dir == 0 || m.claimAttested(s) {
		return false // absent, or an exactfs taker holds its kernel lock on the sidecar
	}
	if s.oldDir {
		return true // made before the current boot
	}
	makerAlive := s.maker != 0 && aliveInc(s, s.maker-1, s.makerInc)
	switch s.side.k {
	case kTomb:
		return !makerAlive
	case kLive:
		return !aliveInc(s, s.side.who, s.side.inc)
	case kTorn:
		return !makerAlive && !m.sideMidWrite(s)
	}
	return false // no sidecar: never broken automatically
}

// allocIno returns the lowest inode id no name, descriptor or snapshot
// refers to (an inode nobody can tell from a fresh one).
func (m *Model) allocIno(s *State) uint8 {
	for id := uint8(1); id <= maxIno; id++ {
		if s.lock == id {
			continue
		}
		used := false
		for i := range m.cfg.Procs {
			q := &s.p[i]
			if q.ino == id || q.hIno == id || q.slotI == id {
				used = true
				break
			}
		}
		if !used {
			s.ino[id] = inode{}
			return id
		}
	}
	panic("model: out of inode ids; raise maxIno")
}

func (m *Model) allocDir(s *State) uint8 {
	for id := uint8(1); ; id++ {
		if s.dir == id {
			continue
		}
		used := false
		for i := range m.cfg.Procs {
			if s.p[i].dSnap == id {
				used = true
			}
		}
		if !used {
			return id
		}
	}
}

func (m *Model) myRec(s *State, i int) rec {
	p := &s.p[i]
	return rec{k: kLive, who: uint8(i), inc: p.inc}
}

// write puts c into inode ino (a new version).
func write(s *State, ino uint8, c rec) {
	s.ino[ino].c = c
	s.ino[ino].ver = fresh
}

// fresh is a version no snapshot holds; canon renumbers it.
const fresh = 255

func (s *State) writeSide(c rec, fsync bool) {
	s.side = c
	s.sideVer = fresh
	if fsync && !s.cut {
		s.durSide = c
	}
}

// finishCycle ends one lock cycle of process i (its record is released or
// handed over).
func (m *Model) finishCycle(s *State, i int) {
	p := &s.p[i]
	p.ino, p.ver, p.hIno, p.hVer, p.tgt, p.after, p.next, p.sSnap = 0, 0, 0, 0, 0, 0, 0, 0
	p.gRec = rec{}
	p.noSt, p.once, p.retry, p.yld = false, false, false, false
	if int(p.done) >= m.cfg.Acquisitions {
		if m.cfg.Procs[i] == TS {
			p.pc = tFin
		} else {
			p.pc = gFin
		}
		return
	}
	if m.cfg.Procs[i] == TS {
		p.pc, p.after = tMkdir, tAcq
	} else {
		p.pc = gLook
	}
}

// stepProc emits every successor of process i's next step.
func (m *Model) stepProc(s *State, i int, emit func(ns *State, what string)) {
	if m.cfg.Procs[i] == TS {
		m.stepTS(s, i, emit)
		return
	}
	m.stepGo(s, i, emit)
}

func (m *Model) stepGo(s *State, i int, emit func(ns *State, what string)) {
	p := &s.p[i]
	kind := m.cfg.Procs[i]
	me := uint8(i)
	ns := *s
	q := &ns.p[i]
	switch p.pc {
	case gLook:
		if s.yield && kind == Cohort && s.lock != 0 && s.ino[s.lock].c.k == kLive && m.cfg.Procs[s.ino[s.lock].c.who] != Cohort {
			// handoff.go yielding: a reference holder's record is in
			// F.lock, so the contender had its turn: the yield ends.
			ns.yield = false
			q.after, q.next, q.pc = gRCap, gLook, gClaim
			emit(&ns, "a reference holder's record in F.lock: the yield ends; evaluate it under the claim")
			return
		}
		if s.lock == 0 || s.ino[s.lock].c.k == kTomb {
			if s.yield && kind == Cohort {
				return // acquire.go try: Go yields the tombstone (waits)
			}
			q.after, q.next, q.pc = gTake, gLook, gClaim
			emit(&ns, "F.lock free or a tombstone: take the claim to acquire")
			return
		}
		c := s.ino[s.lock].c
		if m.goDead(s, kind, s.lock, c) {
			q.after, q.next, q.pc = gRCap, gLook, gClaim
			emit(&ns, "F.lock's owner judged dead: take the claim to reclaim")
			return
		}
		if kind == Cohort && c.k == kLive && m.cfg.Procs[c.who] == Cohort {
			q.ino, q.pc = s.lock, gPub
			emit(&ns, "a live Go owner: queue as a waiter")
			return
		}
		// A live TypeScript/reference owner or a record being written:
		// the attempt evaluates it under the claim (SPEC §4.4), which is
		// also where a claim a crashed peer stranded gets reclaimed.
		q.after, q.next, q.pc = gRCap, gLook, gClaim
		emit(&ns, "not a Go cohort owner: evaluate it under the claim")
	case gClaim:
		if s.dir == 0 {
			ns.dir, ns.maker, ns.makerInc, ns.oldDir = m.allocDir(s), me+1, p.inc, false
			if kind == Cohort {
				// mkdir and the sidecar lock: a reclaimer never judges a
				// claim younger than 1 s, and the lock is taken at once.
				q.sideL = true
				if s.side.k != kTomb {
					if !m.sideDead(s) {
						return // a live owner in the sidecar: give the claim back (no change)
					}
					if m.cfg.Bugs&BugSidecarUnlinkCreate != 0 {
						q.pc = gSideUnlink
						emit(&ns, "BAD: mkdir claim + kernel lock on the sidecar; the sidecar is a dead record")
						return
					}
					// Proved through its descriptor and rewritten in
					// place: no moment without a sidecar.
					ns.writeSide(rec{k: kTomb}, true)
				}
				q.pc = q.after
				emit(&ns, "mkdir claim + kernel lock on the sidecar (sidecar stays a tombstone)")
				return
			}
			if kind == Old {
				q.sideL = true
				q.pc = gRefSide
				emit(&ns, "mkdir claim + kernel lock on the sidecar")
				return
			}
			q.pc = gClDurable
			if m.cfg.Bugs&BugRefTakeNoDirSync != 0 {
				q.pc = gRefSide
			}
			emit(&ns, "mkdir claim (not yet durable)")
			return
		}
		if m.claimStale(s) {
			q.dSnap, q.sSnap, q.pc = s.dir, s.sideVer, gClEntomb
			emit(&ns, "claim in the way judged crashed: snapshot it")
		}
		if kind == Cohort && p.after == gRelProve && p.once {
			// §4.8.3: a release that makes one attempt at the claim
			// (a claim seen, or the kept record let go) never blocks its
			// caller on a claim in the way (a dead process's may not be
			// judged for a second, or ever: no valid sidecar): it keeps
			// F.lock, its record still live and attested, and retries
			// (lock.go releaseReference once, sticky.go keepBusy).
			ns2 := *s
			ns2.p[i].after, ns2.p[i].next, ns2.p[i].pc = 0, 0, gSticky
			ns2.p[i].once, ns2.p[i].retry = false, true
			emit(&ns2, "the claim is busy at our one attempt: keep F.lock (sticky) and retry; the caller goes on")
		}
	case gClEntomb:
		if s.dir != p.dSnap || s.sideVer != p.sSnap {
			q.dSnap, q.sSnap, q.pc = 0, 0, gClaim
			emit(&ns, "crashed claim changed since judged: look again")
			return
		}
		if s.side.k != kTomb {
			ns.writeSide(rec{k: kTomb}, true)
		}
		q.pc = gClRemove
		emit(&ns, "crashed claim: sidecar proved and made a tombstone, fsynced")
	case gClRemove:
		q.dSnap, q.sSnap, q.pc = 0, 0, gClaim
		if s.dir == p.dSnap {
			ns.dir, ns.maker, ns.makerInc, ns.oldDir = 0, 0, 0, false
			emit(&ns, "crashed claim: exact tree removal")
			return
		}
		emit(&ns, "crashed claim: removal refused (a new claim)")
	case gClDurable:
		// claimDurable: l.dir.Sync() after mkdir (or the spare's rename)
		// and after reuseReleased proved the sidecar a tombstone, before
		// overwrite writes a byte of our record into it. An fsync of the
		// directory makes what it names now durable: the claim directory.
		if !s.cut {
			ns.durDir = s.dir != 0
		}
		q.pc = gRefSide
		emit(&ns, "fsync the directory: the claim directory is durable")
	case gSideUnlink:
		ns.side, ns.sideVer = rec{}, fresh
		q.pc = gSideCreate
		emit(&ns, "BAD: exact unlink of the dead sidecar (the claim directory has no sidecar now)")
	case gSideCreate:
		ns.writeSide(rec{k: kTomb}, true)
		q.pc = q.after
		emit(&ns, "BAD: create the sidecar again")
	case gRefSide:
		if s.side.k != kTomb && !m.sideDead(s) {
			return
		}
		ns.writeSide(m.myRec(s, i), false)
		q.pc = q.after
		emit(&ns, "our record into the sidecar (not fsynced)")
	case gTake:
		if s.lock == 0 {
			id := m.allocIno(&ns)
			write(&ns, id, m.myRec(s, i))
			ns.lock = id
			q.hIno, q.hVer = id, ns.ino[id].ver
			if kind == Cohort || kind == Old {
				q.slotI = id
			}
			q.next, q.pc = gCS, gCRel
			emit(&ns, "create F.lock whole (slot lock before the link)")
			return
		}
		if s.ino[s.lock].c.k == kTomb {
			if kind == Cohort || kind == Old {
				q.slotI = s.lock
			}
			write(&ns, s.lock, m.myRec(s, i))
			q.hIno, q.hVer = s.lock, ns.ino[s.lock].ver
			q.next, q.pc = gCS, gCRel
			emit(&ns, "rewrite F.lock's tombstone in place (slot lock first)")
			return
		}
		q.next, q.pc = gLook, gCRel
		emit(&ns, "F.lock taken meanwhile: contention")
	case gRCap:
		if s.lock == 0 {
			q.next, q.pc = gLook, gCRel
			emit(&ns, "reclaim: F.lock already gone")
			return
		}
		q.ino, q.ver, q.pc = s.lock, s.ino[s.lock].ver, gRJudge
		emit(&ns, "reclaim: capture F.lock")
	case gRJudge:
		if s.ino[p.ino].ver == p.ver && s.ino[p.ino].c.k == kMix {
			// A torn read of a hand-off (§4.8.2c): the mix may parse
			// and name a slot nobody holds; or be malformed or name a
			// held slot, and be kept (below).
			ns2 := *s
			ns2.p[i].pc = gRUnlink
			emit(&ns2, "reclaim: a torn read of a hand-off names a slot nobody holds: judged dead")
		}
		if s.ino[p.ino].ver == p.ver && m.goDead(s, kind, p.ino, s.ino[p.ino].c) {
			q.pc = gRUnlink
			emit(&ns, "reclaim: judged dead")
			return
		}
		q.ino, q.ver, q.next, q.pc = 0, 0, gLook, gCRel
		emit(&ns, "reclaim: alive or changed, keep it")
	case gRUnlink:
		if s.lock == p.ino && s.ino[p.ino].ver == p.ver && s.ino[p.ino].c.k == kMix {
			ns.lock = 0
			q.pc = gRVerify
			emit(&ns, "reclaim: exact unlink detaches the torn snapshot to its quarantine name")
			return
		}
		if s.lock == p.ino && s.ino[p.ino].ver == p.ver {
			ns.lock = 0
			ns.ino[p.ino] = inode{}
			q.ino, q.ver, q.next, q.pc = 0, 0, gLook, gCRel
			emit(&ns, "reclaim: exact unlink of the judged snapshot")
			return
		}
		q.ino, q.ver, q.next, q.pc = 0, 0, gLook, gCRel
		emit(&ns, "reclaim: exact unlink refused (changed)")
	case gRVerify:
		q.ino, q.ver, q.next, q.pc = 0, 0, gLook, gCRel
		if s.ino[p.ino].ver == p.ver {
			emit(&ns, "reclaim: the detached inode is still the torn snapshot: deleted")
			return
		}
		m.putBack(&ns, p.ino)
		emit(&ns, "reclaim: the detached inode changed (the pwrite ended): put back, refused")
	case gRelProve:
		if s.lock != p.hIno || s.ino[p.hIno].ver != p.hVer {
			q.fail = true
			q.pc = gFin
			emit(&ns, "VIOLATION: our record changed while we held it")
			return
		}
		write(&ns, p.hIno, rec{k: kTomb})
		q.slotI = 0
		q.hIno, q.hVer, q.next, q.pc = 0, 0, gFin, gCRel
		emit(&ns, "release: proved ours, tombstone in place, slot lock dropped")
	case gCRel:
		if kind == Cohort {
			ns.dir, ns.maker, ns.makerInc, ns.oldDir = 0, 0, 0, false
			q.sideL = false
			m.afterClaim(&ns, i)
			emit(&ns, "release claim: rmdir, then drop the sidecar lock")
			return
		}
		if m.cfg.Bugs&BugRefRmdirFirst != 0 {
			ns.dir, ns.maker, ns.makerInc, ns.oldDir = 0, 0, 0, false
			q.pc = gCRmdir
			emit(&ns, "BAD: release claim: rmdir first")
			return
		}
		if kind == Old {
			ns.writeSide(rec{k: kTomb}, false)
			q.pc = gCRmdir
			emit(&ns, "release claim: sidecar tombstone (not fsynced, as today's releaseClaim)")
			return
		}
		ns.writeSide(rec{k: kTomb}, m.cfg.Bugs&BugRmdirBeforeDurableTomb == 0)
		q.pc = gCRmdir
		if m.cfg.Bugs&BugRmdirBeforeDurableTomb == 0 {
			emit(&ns, "release claim: sidecar tombstone, fsync")
		} else {
			emit(&ns, "BAD: release claim: sidecar tombstone (NOT fsynced)")
		}
	case gCRmdir:
		if m.cfg.Bugs&BugRefRmdirFirst != 0 {
			ns.writeSide(rec{k: kTomb}, true)
			m.afterClaim(&ns, i)
			emit(&ns, "BAD: then the sidecar tombstone")
			return
		}
		ns.dir, ns.maker, ns.makerInc, ns.oldDir = 0, 0, 0, false
		q.sideL = false
		m.afterClaim(&ns, i)
		emit(&ns, "release claim: rmdir (then drop any sidecar lock)")
	case gPub:
		q.mail, q.mRec, q.mBy, q.pc = mWaiting, m.myRec(s, i), 0, gSlot
		emit(&ns, "publish our exact bytes in the mailbox, WAITING")
	case gSlot:
		q.slotI, q.pc = p.ino, gWait
		emit(&ns, "slot lock on the captured inode, queue")
	case gWait:
		if s.ino[p.slotI].c == p.mRec && (s.lock == p.slotI || m.cfg.Bugs&BugEnterNoName != 0) {
			q.hIno, q.hVer = p.slotI, s.ino[p.slotI].ver
			q.mail, q.mBy, q.mByI, q.ino, q.pc = mIdle, 0, 0, 0, gCS
			q.noSt = false
			if s.lock != p.slotI {
				emit(&ns, "BAD: granted: our exact bytes through our descriptor, the name not checked")
				return
			}
			emit(&ns, "granted: our exact bytes through our descriptor, name still names it")
			return
		}
		if p.mail == mGranting && !aliveInc(s, p.mBy-1, p.mByI) && m.cfg.Bugs&BugNoGrantRecovery == 0 {
			q.mail, q.mBy, q.mByI = mWaiting, 0, 0
			emit(&ns, "granter died mid-grant (bytes not ours): back to WAITING")
			return
		}
		if p.mail == mWaiting {
			live := s.lock == p.slotI && s.ino[s.lock].c.k == kLive &&
				m.cfg.Procs[s.ino[s.lock].c.who] == Cohort && !m.goDead(s, kind, s.lock, s.ino[s.lock].c)
			if !live {
				q.mail, q.mRec, q.slotI, q.ino, q.pc = mIdle, rec{}, 0, 0, gLook
				emit(&ns, "holder gone or F.lock changed: withdraw (CAS WAITING->idle), drop slot lock")
				return
			}
			// (A caller that gives up meanwhile: giveUp, an environment
			// step that successors in check.go takes.)
		}
	case gCS:
		q.done++
		if kind != Cohort {
			q.after, q.next, q.pc = gRelProve, gFin, gClaim
			emit(&ns, "leave critical section, release (reference way)")
			return
		}
		q.pc = gRel
		emit(&ns, "leave critical section")
	case gRel:
		m.release(s, i, emit)
	case gCheck:
		w := int(p.tgt - 1)
		if m.cfg.Bugs&BugNoSlotCheck != 0 || m.slotHeld(s, p.hIno, m.slotNum(p.gRec.who, p.gRec.inc)) {
			if m.cfg.Bugs&BugTombstoneHandoff != 0 {
				q.pc = gPwTomb
			} else {
				q.pc = gPwrite
			}
			emit(&ns, "waiter's slot lock is held on our inode")
			return
		}
		if ns.p[w].mail == mGranting && ns.p[w].mBy == me+1 {
			ns.p[w].mail, ns.p[w].mBy, ns.p[w].mByI = mWaiting, 0, 0
		}
		q.tgt, q.gRec, q.pc = 0, rec{}, gRel
		emit(&ns, "waiter's slot lock not held here: cancel the grant")
	case gPwTomb:
		write(&ns, p.hIno, rec{k: kTomb})
		q.pc = gPwrite
		emit(&ns, "BAD: tombstone first, no claim")
	case gPwrite:
		write(&ns, p.hIno, rec{k: kMix, who: p.gRec.who})
		q.pc = gPwEnd
		emit(&ns, "pwrite the waiter's bytes over ours, padded: the copy starts")
	case gPwEnd:
		write(&ns, p.hIno, p.gRec)
		q.pc = gGranted
		emit(&ns, "the pwrite's copy ends: our inode holds exactly the waiter's bytes")
	case gGranted:
		w := int(p.tgt - 1)
		if s.lock != p.hIno && m.cfg.Bugs&BugNoClosingCheck == 0 {
			// §4.8.2d: F.lock no longer names the inode we wrote. Every
			// exact unlink runs under the claim; one that detached a
			// torn read puts the inode back before its taker releases
			// the claim. So while a live taker holds the claim, look
			// again (no step: the lstat is repeated); otherwise the
			// grant failed: cancel it and go.
			claimLive := s.dir != 0 && s.maker != 0 && aliveInc(s, s.maker-1, s.makerInc)
			if claimLive && m.cfg.Bugs&BugDetachLoss == 0 {
				return
			}
			if ns.p[w].mail == mGranting && ns.p[w].mBy == me+1 {
				ns.p[w].mail, ns.p[w].mBy, ns.p[w].mByI = mWaiting, 0, 0
			}
			q.slotI = 0
			m.finishCycle(&ns, i)
			if claimLive {
				emit(&ns, "BAD: lstat: F.lock is not our inode: the lock is lost, cancel the grant")
				return
			}
			emit(&ns, "lstat: F.lock is not our inode and no live claim taker will put it back: cancel the grant")
			return
		}
		if ns.p[w].mail == mGranting && ns.p[w].mBy == me+1 {
			ns.p[w].mail = mGranted
		}
		q.slotI = 0
		m.finishCycle(&ns, i)
		emit(&ns, "lstat: still our inode; drop our slot lock, GRANTED, wake")
	case gSticky:
		m.sticky(s, i, emit)
	}
}

// sideDead: the sidecar names no live owner (used only off the steady
// state, after a power cut or under a bad variant).
func (m *Model) sideDead(s *State) bool {
	switch s.side.k {
	case kLive:
		return !aliveInc(s, s.side.who, s.side.inc)
	case kTorn:
		return !m.sideMidWrite(s)
	}
	return true
}

func (m *Model) afterClaim(s *State, i int) {
	q := &s.p[i]
	next := q.next
	q.after, q.next = 0, 0
	if next == gFin {
		m.finishCycle(s, i)
		return
	}
	q.pc = next
}

// release is the cohort owner's choice at the end of a critical section
// (lock.go release, handoff.go handoff, sticky.go stick on r5-sticky):
//   - hand F.lock to a seated waiter (handoff.go);
//   - when a TypeScript contender polls while Go waiters queue, yield
//     instead: the mailbox's yield holds Go takers off the tombstone, and
//     the release is the reference one (handoff.go referencePolling: the
//     sidecar rewritten since the last look, a timing test the model
//     reads as "may be noticed" while a TypeScript process polls);
//   - keep F.lock (sticky, §4.8.3) when no waiter is seated, no claim
//     directory exists, and the process locks again;
//   - with a claim directory instead: yield, and make one attempt at the
//     claim for the reference release (busy: keep F.lock and retry,
//     gClaim; the caller is never blocked on a claim a dead process left);
//   - release the reference way (under the claim, waiting for it).
//
// A release that yielded (p.yld) hands F.lock to no Go process: no grant,
// no keeping for a re-lock (PropYieldHonoured); BugYieldThenKeep is the
// order of r5-sticky's release today (the hand-off's yield, then stick).
func (m *Model) release(s *State, i int, emit func(ns *State, what string)) {
	p := &s.p[i]
	bugs := m.cfg.Bugs
	yieldBug := bugs&BugYieldThenKeep != 0
	waiting := false
	for w := range m.cfg.Procs {
		if w == i || m.cfg.Procs[w] != Cohort || s.p[w].mail != mWaiting {
			continue
		}
		waiting = true
		if p.yld && !yieldBug {
			continue
		}
		ns := *s
		ns.p[w].mail, ns.p[w].mBy, ns.p[w].mByI = mGranting, uint8(i)+1, p.inc
		ns.p[i].tgt, ns.p[i].gRec, ns.p[i].pc = uint8(w)+1, s.p[w].mRec, gCheck
		if p.yld {
			ns.yieldBroken = true
			emit(&ns, "BAD: hand-off: CAS a waiter WAITING->GRANTING after this release yielded")
			continue
		}
		emit(&ns, "hand-off: CAS a waiter WAITING->GRANTING")
	}
	if waiting && !p.yld && m.tsPolling(s) {
		ns := *s
		ns.yield, ns.p[i].yld = true, true
		if yieldBug {
			if s.dir == 0 && !p.noSt && int(p.done) < m.cfg.Acquisitions {
				ns.p[i].pc = gSticky
				emit(&ns, "BAD: a TypeScript contender polls: yield; then keep F.lock (sticky), as with no waiter seated")
			}
		} else {
			ns.p[i].after, ns.p[i].next, ns.p[i].pc = gRelProve, gFin, gClaim
			emit(&ns, "a TypeScript contender polls: no hand-off; yield the tombstone to it and release the reference way")
		}
	}
	relocks := int(p.done) < m.cfg.Acquisitions || bugs&BugStickyNoIdle != 0
	free := !waiting && !p.yld
	if free && s.dir == 0 && !p.noSt && relocks {
		ns := *s
		ns.p[i].pc = gSticky
		switch {
		case bugs&BugStickyDropsSlot != 0:
			ns.p[i].slotI = 0
			emit(&ns, "BAD: sticky: keep F.lock, but drop the slot lock that attests it")
		default:
			emit(&ns, "sticky: keep F.lock (no waiter, no claim directory), slot lock held")
		}
	}
	if free && s.dir != 0 && !p.noSt && !p.yld && int(p.done) < m.cfg.Acquisitions {
		ns := *s
		q := &ns.p[i]
		q.once, q.noSt = true, true
		q.after, q.next, q.pc = gRelProve, gFin, gClaim
		if m.claimAttested(s) {
			emit(&ns, "a Go taker's claim directory at our release (its kernel lock on the sidecar): no yield; one attempt at the claim for the reference release")
		} else {
			ns.yield, q.yld = true, true
			emit(&ns, "a claim directory at our release: yield; one attempt at the claim for the reference release")
		}
	}
	ns := *s
	ns.p[i].after, ns.p[i].next, ns.p[i].pc = gRelProve, gFin, gClaim
	if p.once {
		emit(&ns, "release the reference way: one attempt at the claim")
		return
	}
	emit(&ns, "release the reference way (under the claim)")
}

// sticky is a cohort owner that kept F.lock after its caller's critical
// section (§4.8.3; sticky.go on r5-sticky): its live record stays in
// F.lock, its slot lock held, for at most the sticky time. Its steps:
//   - kept because its release found the claim busy (p.retry): the
//     release is tried again, one attempt (sticky.go watch); no re-lock
//     takes it back;
//   - it sees the claim directory (a reference contender polls through
//     it): it yields and makes one attempt at the reference release;
//   - its process locks again (while no claim directory exists): the
//     re-lock proceeds after the proof, an lstat that F.lock still names
//     the kept inode with the size, mtime and ctime it left (the model's
//     version), and one pwrite of a fresh token (padded, the same
//     length: a torn read of it is our record either way); refused, it
//     forgets the kept record and acquires afresh (PropStickyRelock
//     checks the record the proof vouches for);
//   - the sticky time runs out, or a waiter is seated (no re-lock came):
//     the release, one attempt at the claim, which hands off to a waiter
//     seated meanwhile or releases the reference way.
//
// A crash at this step is the generic one (check.go): the record stays
// live in F.lock, its slot lock and its pid gone, so every judge finds it
// dead. In statelock the choice between these is one decision in memory
// (the kept record is taken either by the re-lock or by the release,
// never by both); the model's process is one sequence of steps, which is
// that.
func (m *Model) sticky(s *State, i int, emit func(ns *State, what string)) {
	p := &s.p[i]
	bugs := m.cfg.Bugs
	ns := *s
	q := &ns.p[i]
	if p.retry {
		q.retry, q.once, q.noSt, q.pc = false, true, true, gRel
		emit(&ns, "kept after a busy claim: try the release again (one attempt at the claim)")
		return
	}
	if s.dir != 0 && bugs&BugStickyIgnoresClaim == 0 {
		q.once, q.noSt = true, true
		q.after, q.next, q.pc = gRelProve, gFin, gClaim
		if m.claimAttested(s) {
			emit(&ns, "sticky: a Go taker's claim directory (its kernel lock on the sidecar): no yield; one attempt at the claim for the reference release")
			return
		}
		ns.yield, q.yld = true, true
		emit(&ns, "sticky: a claim directory: yield; one attempt at the claim for the reference release")
		return
	}
	if int(p.done) < m.cfg.Acquisitions {
		// ours: the kept record is exactly what F.lock names and holds
		ours := s.lock == p.hIno && s.ino[p.hIno].c == m.myRec(s, i)
		relock := func(what string) {
			ns.badRelock = !ours
			ns.yieldBroken = ns.yieldBroken || p.yld
			if ours {
				write(&ns, p.hIno, m.myRec(s, i)) // a fresh token, one pwrite
				q.hVer = ns.ino[p.hIno].ver
			}
			q.slotI = p.hIno // (held already; BugStickyDropsSlot takes it again)
			q.pc, q.noSt, q.yld = gCS, false, false
			emit(&ns, what)
		}
		switch {
		case bugs&BugStickyNoProof != 0:
			relock("BAD: sticky re-lock without the proof")
		case s.dir != 0:
			relock("BAD: sticky re-lock while a claim directory exists")
		case p.yld:
			relock("BAD: sticky re-lock after the release yielded")
		case s.lock == p.hIno && s.ino[p.hIno].ver == p.hVer:
			relock("sticky re-lock: lstat says F.lock is still our kept inode, unchanged; a fresh token")
		default:
			q.slotI, q.hIno, q.hVer = 0, 0, 0
			q.pc, q.noSt = gLook, false
			emit(&ns, "sticky re-lock refused: F.lock is not our kept inode as we left it: forget it, acquire afresh")
		}
	}
	if bugs&BugStickyNoIdle == 0 {
		ns2 := *s
		ns2.p[i].noSt, ns2.p[i].once, ns2.p[i].pc = true, true, gRel
		emit(&ns2, "sticky time over or a waiter seated: release (hand off to the waiter, or one attempt at the claim)")
	}
}

// tsPolling: a TypeScript process is trying to acquire (alive, not
// holding F.lock, not done): what statelock's referencePolling may notice.
func (m *Model) tsPolling(s *State) bool {
	for i, k := range m.cfg.Procs {
		p := &s.p[i]
		if k == TS && !p.dead && !p.fail && p.hIno == 0 && p.pc != tFin && p.pc != tFailed {
			return true
		}
	}
	return false
}

func (m *Model) fatal(ns *State, i int, emit func(*State, string), what string) {
	ns.p[i].fail = true
	ns.p[i].pc = tFailed
	emit(ns, "TS FATAL: "+what)
}

func (m *Model) stepTS(s *State, i int, emit func(ns *State, what string)) {
	p := &s.p[i]
	me := uint8(i)
	ns := *s
	q := &ns.p[i]
	switch p.pc {
	case tMkdir:
		if s.dir == 0 {
			ns.dir, ns.maker, ns.makerInc, ns.oldDir = m.allocDir(s), me+1, p.inc, false
			q.pc = tSCap
			emit(&ns, "mkdir claim")
		}
		// a claim in the way: the seed never reclaims a directory; sleep, retry
	case tSCap:
		switch s.side.k {
		case kTomb:
			ns.writeSide(rec{k: kTorn, who: me}, false)
			q.pc = tSWrite
			emit(&ns, "sidecar is a tombstone: proved, truncated")
		case kAbsent:
			ns.writeSide(rec{k: kTorn, who: me}, false)
			q.pc = tSWrite
			emit(&ns, "sidecar created (empty)")
		default:
			if s.cut && m.cfg.Procs[s.side.who] == TS {
				// After a power cut, a sidecar a TypeScript process wrote:
				// the seed writes its record after mkdir without making
				// the directory durable, so the reference does this to
				// itself (not a Go step's doing). withLockPathTransition
				// removes its claim directory and its operation fails; the
				// next Go taker heals the sidecar.
				ns.dir, ns.maker, ns.makerInc, ns.oldDir = 0, 0, 0, false
				q.pc = tFailed
				emit(&ns, "TS fails on its own: T1 on a sidecar a TypeScript process wrote before the cut (its mkdir was not durable); rmdir its claim")
				return
			}
			m.fatal(&ns, i, emit, "T1: the sidecar under a fresh claim is not a tombstone (EEXIST escapes)")
		}
	case tSWrite:
		ns.writeSide(m.myRec(s, i), true)
		q.sSnap, q.pc = ns.sideVer, tSRecap
		emit(&ns, "our record into the sidecar, fsync")
	case tSRecap:
		if s.sideVer != p.sSnap {
			m.fatal(&ns, i, emit, "T4: sidecar changed after our rewrite")
			return
		}
		q.pc = p.after
		emit(&ns, "sidecar re-captured: ours")
	case tAcq:
		if s.lock == 0 {
			id := m.allocIno(&ns)
			write(&ns, id, rec{k: kTorn, who: me})
			ns.lock = id
			q.ino, q.pc = id, tACWrite
			emit(&ns, "create F.lock (O_EXCL, empty)")
			return
		}
		if s.ino[s.lock].c.k == kTomb {
			q.ino = s.lock
			write(&ns, s.lock, rec{k: kTorn, who: me})
			q.pc = tAWrite
			emit(&ns, "F.lock is a tombstone: proved through our descriptor, truncated")
			return
		}
		q.next, q.pc = tLstat, tCRel
		emit(&ns, "EEXIST and not a tombstone: contention")
	case tACWrite:
		write(&ns, p.ino, m.myRec(s, i))
		q.hIno, q.hVer = p.ino, ns.ino[p.ino].ver
		q.ino, q.next, q.pc = 0, tCS, tCRel
		emit(&ns, "write our record into the new F.lock")
	case tAWrite:
		write(&ns, p.ino, m.myRec(s, i))
		q.ver, q.pc = ns.ino[p.ino].ver, tARecap
		emit(&ns, "write our record, fsync")
	case tARecap:
		if s.lock != p.ino || s.ino[p.ino].ver != p.ver {
			m.fatal(&ns, i, emit, "T4: F.lock changed during our rewrite of its tombstone")
			return
		}
		q.hIno, q.hVer = p.ino, p.ver
		q.ino, q.ver, q.next, q.pc = 0, 0, tCS, tCRel
		emit(&ns, "F.lock re-captured: ours")
	case tCRel:
		if s.sideVer != p.sSnap {
			m.fatal(&ns, i, emit, "sidecar changed before our claim release")
			return
		}
		ns.writeSide(rec{k: kTorn, who: me}, false)
		q.pc = tCRWrite
		emit(&ns, "release claim: sidecar proved, truncated")
	case tCRWrite:
		ns.writeSide(rec{k: kTomb}, true)
		q.sSnap, q.pc = ns.sideVer, tCRRmdir
		emit(&ns, "release claim: sidecar tombstone, fsync")
	case tCRRmdir:
		if s.sideVer != p.sSnap {
			m.fatal(&ns, i, emit, "sidecar changed after our tombstone rewrite")
			return
		}
		ns.dir, ns.maker, ns.makerInc, ns.oldDir = 0, 0, 0, false
		q.sSnap = 0
		next := p.next
		q.next = 0
		switch next {
		case tFin:
			m.finishCycle(&ns, i)
		case tAcq:
			q.pc, q.after = tMkdir, tAcq
		default:
			q.pc = next
		}
		emit(&ns, "release claim: re-captured, rmdir")
	case tLstat:
		if s.lock == 0 {
			q.pc, q.after = tMkdir, tAcq
			emit(&ns, "lstat: F.lock absent, retry")
			return
		}
		q.pc, q.after = tMkdir, tRCap
		emit(&ns, "lstat: a regular file, reclaim under a claim")
	case tRCap:
		if s.lock == 0 {
			q.next, q.pc = tAcq, tCRel
			emit(&ns, "reclaim: nothing to capture")
			return
		}
		q.ino, q.ver, q.pc = s.lock, s.ino[s.lock].ver, tRJudge
		emit(&ns, "reclaim: capture F.lock")
	case tRJudge:
		c := s.ino[p.ino].c
		if s.ino[p.ino].ver == p.ver && c.k == kMix {
			// A torn read of a hand-off may parse with a garbled pid.
			ns2 := *s
			ns2.p[i].pc = tRUnlink
			emit(&ns2, "reclaim: a torn read of a hand-off names a dead pid")
		}
		if s.ino[p.ino].ver == p.ver && c.k == kLive && !aliveInc(s, c.who, c.inc) {
			q.pc = tRUnlink
			emit(&ns, "reclaim: owner's pid is dead")
			return
		}
		q.ino, q.ver, q.next, q.pc = 0, 0, tAcq, tCRel
		emit(&ns, "reclaim: alive, released (pid 1), malformed or changed: keep")
	case tRUnlink:
		if s.lock == p.ino && s.ino[p.ino].ver == p.ver && s.ino[p.ino].c.k == kMix {
			ns.lock = 0
			q.pc = tRVerify
			emit(&ns, "reclaim: re-captured identical (the pwrite stalled), exact unlink detaches it to its quarantine name")
			return
		}
		if s.lock == p.ino && s.ino[p.ino].ver == p.ver {
			ns.lock = 0
			ns.ino[p.ino] = inode{}
			reclaimDone(q)
			emit(&ns, "reclaim: re-captured identical, exact unlink")
			return
		}
		reclaimDone(q)
		emit(&ns, "reclaim: re-capture differs, keep")
	case tRVerify:
		if s.ino[p.ino].ver == p.ver {
			reclaimDone(q)
			emit(&ns, "reclaim: the detached inode is still the torn snapshot: deleted (removed)")
			return
		}
		m.putBack(&ns, p.ino)
		reclaimDone(q)
		emit(&ns, "reclaim: the detached inode changed (the pwrite ended): put back (identity_mismatch)")
	case tCS:
		q.done++
		q.after, q.pc = tRel, tMkdir
		emit(&ns, "leave critical section")
	case tRel:
		if s.lock != p.hIno || s.ino[p.hIno].ver != p.hVer {
			m.fatal(&ns, i, emit, "our record changed before release")
			return
		}
		write(&ns, p.hIno, rec{k: kTorn, who: me})
		q.pc = tLWrite
		emit(&ns, "release: record proved, truncated")
	case tLWrite:
		write(&ns, p.hIno, rec{k: kTomb})
		q.hVer, q.pc = ns.ino[p.hIno].ver, tLRecap
		emit(&ns, "release: tombstone written, fsync")
	case tLRecap:
		c := s.ino[p.hIno].c
		if s.lock != p.hIno || (s.ino[p.hIno].ver != p.hVer && c.k != kLive) {
			m.fatal(&ns, i, emit, "F.lock changed after our release rewrite")
			return
		}
		q.next, q.pc = tFin, tCRel
		emit(&ns, "release: re-captured")
	}
}

// giveUp is a waiter whose caller's time runs out or whose context ends
// while it waits (or between publishing its bytes and taking its slot
// lock): the CAS WAITING->idle, racing the owner's
// WAITING->GRANTING. When the owner won (GRANTING) the CAS fails and
// nothing happens here: the waiter waits for the grant's outcome, and a
// grant it gets it runs (a caller that gave up enters and releases at once,
// which the model counts as a critical section: the stricter reading).
// The acquisition is then tried again (a timeout is a retry). It is the
// environment's step, like a crash: the Go side must be able to finish
// without any waiter giving up (else a wait on oneself, BugSlotReuse,
// would look healed by the timeout).
func (m *Model) giveUp(s *State, i int, emit func(ns *State, what string)) {
	p := &s.p[i]
	if m.cfg.Procs[i] != Cohort || p.dead || (p.pc != gWait && p.pc != gSlot) || p.mail != mWaiting {
		return
	}
	ns := *s
	q := &ns.p[i]
	q.mail, q.mRec, q.slotI, q.ino, q.pc = mIdle, rec{}, 0, 0, gLook
	emit(&ns, "give up (timeout or cancel): CAS WAITING->idle won, drop slot lock, try again")
}

// putBack returns a detached inode to F.lock's name (unlink.go swapBack;
// the native primitive likewise). The detacher holds the claim, so no
// protocol step can have taken the name meanwhile; if one did, the live
// record would stay detached (residue), which the checker reports.
func (m *Model) putBack(s *State, ino uint8) {
	if s.lock != 0 {
		s.lost = true
		return
	}
	s.lock = ino
}

// reclaimDone ends a TypeScript reclaim: forget the snapshot, release the
// claim, then try to acquire again.
func reclaimDone(q *proc) {
	q.ino, q.ver, q.next, q.pc = 0, 0, tAcq, tCRel
}
