package statelock

// Every verdict rule of the lock, in the order the protocol meets the
// objects. This file answers "when does exactfs reclaim X, and when does it
// leave X alone?"; the mechanics that act on a verdict (captures, the
// judge → re-capture → exact removal bracket, kernel-lock probes on a
// descriptor, tree removal) live elsewhere and are named at each rule.
//
//  0. Whose object it is (SPEC §4.2 "Trust"): distrust, foreignOwner. An
//     object owned by another uid (neither ours nor the directory's
//     owner's), with extra links or the wrong mode is never adopted,
//     rewritten or removed; it is replaced under the claim or refused
//     (trust.go).
//  1. The owner record F.lock (SPEC §4.2, §4.4; liveness §3): judgeRecord
//     → kernelVerdict (the OFD or slot lock on the very inode, §4.8) → the
//     pid rules of package liveness; a record that does not parse:
//     judgeMalformed (before this boot, the abandoned write, the historical
//     released:false shape). What the acquisition does with the record it
//     finds at the name (reuse a tombstone, replace one it may not adopt,
//     remove a dead one, entomb a dead sidecar): judgeOccupant. Explicit
//     recovery's rule for F.lock: abandonedLock. Acted on by take.go (reclaim under the claim) and
//     recover.go (recoverLock).
//  2. The claim's sidecar F.lock.transition.owner (SPEC §4.3, §4.8):
//     judgeSidecar. Acted on through the claim (claim.go).
//  3. The claim directory F.lock.transition (SPEC §4.3): judgeClaimDir on
//     claimEvidence (ages from claimAges), emptyTree for a detached
//     remainder, judgeSupersededClaim for the regular file of a superseded
//     protocol at that name; explicit recovery's rule for a claim without
//     a readable sidecar: claimRecoverable, judgeCrashedClaim. Acted on by
//     claim.go (reclaimStaleClaim) and recover.go (recoverClaim).
//  4. A legacy directory lock F.lock/ (SPEC §4.5): judgeLegacy,
//     legacyDetached. Acted on by legacy.go (reclaimLegacy).
//  5. Crash residue (SPEC §5.4, §2.7): stateResidue (which names the sweep
//     judges), prejudgeResidue and judgeStateResidue (the holder's sweep
//     under the lock), residueEvidence and judgeMoveAside (Recover's
//     rules), recoverVerdict and sameAs (how a rule's evidence becomes a
//     verdict). Acted on by residue.go (sweepResidue) and recover.go.
//
// Every rule keeps what it cannot prove: an unknown answer from the
// kernel, an unparsable record, another user's object, a changed version
// are never read as "dead".

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

// ---- 0. Whose object it is (SPEC §4.2 "Trust") ----

// modesHere is false on Windows, which has no POSIX modes: every file
// that is not read-only reads 0666 there and every directory 0777, the
// reference's records included, so the mode says nothing about who may
// write an object and the rule keeps its owner and link checks only. Who
// may write a record there is the directory's DACL, which its records
// inherit (the reference's too); it is not checked here.
const modesHere = runtime.GOOS != "windows"

// distrust says why the object st describes may not be adopted, or ""
// when it may. dir: a claim directory (mode 0700; its link count is the
// filesystem's business), else a record or sidecar (mode 0600, one link).
func (l *locker) distrust(st exactfs.RawStat, dir bool) string {
	if why := l.foreignOwner(st.Uid); why != "" {
		return why
	}
	want := uint32(0o600)
	if dir {
		want = 0o700
	}
	if got := st.PermBits(); got != want && modesHere {
		return fmt.Sprintf("its mode is %04o, not the protocol's %04o", got, want)
	}
	if !dir && st.Nlink != 1 {
		return fmt.Sprintf("it has %d links (another name keeps the same file)", st.Nlink)
	}
	return ""
}

// foreignOwner says "owned by uid N (name)" when uid is neither ours nor
// the directory's owner's, else "".
func (l *locker) foreignOwner(uid uint32) string {
	euid := l.euid
	if euid < 0 || uid == uint32(euid) {
		return ""
	}
	if d, err := l.dir.StatRaw(); err == nil && d.Uid == uid {
		return ""
	}
	return "it is owned by " + userName(uid) + ", not by us (" + userName(uint32(euid)) + ") or the directory's owner"
}

// ---- 1. The owner record F.lock (SPEC §4.2, §4.4; liveness: §3) ----

// staleAge is the reference's stale window: the one malformed shape that
// may be reclaimed by age must be at least this old, and so must an empty
// legacy directory.
const staleAge = 30 * time.Second

// verdict is a judgement of one captured record.
type verdict struct {
	liveness.Judgement
	reason Reason // the contention reason when the record is kept
}

func (v verdict) dead() bool { return v.Verdict == liveness.Dead }

// judgeRecord decides whether the owner of a captured record is gone.
//
// f is the descriptor the snapshot's bytes were read through. For a record
// an exactfs holder wrote on this host in this boot, the kernel itself
// answers: the holder took an OFD lock on this inode before writing these
// bytes and keeps it while it holds the lock, and the kernel drops it when
// the holder's descriptor goes away, however the holder died. So "no
// conflicting lock" proves the holder gone, with no pid-reuse ambiguity;
// "a lock" proves it there. The test is asked through f, the very inode the
// bytes came from, never through a fresh lookup of the pathname. Records
// without our evidence fields (TypeScript peers) hold no such lock and are
// judged by the pid rules alone (package liveness).
func (l *locker) judgeRecord(s *snapshot, f *os.File) verdict {
	if s.rec == nil {
		return l.judgeMalformed(s, f)
	}
	r := s.rec
	if r.Released {
		return verdict{liveness.Judgement{Verdict: liveness.Dead, Reason: "released"}, ""}
	}
	if k, ok := l.kernelVerdict(r, f); ok {
		return k
	}
	j := l.judge.Judge(liveness.Owner{
		Pid:             int(r.Pid),
		StartTime:       r.StartTime,
		StartTimeFormat: r.StartTimeFormat,
		HostID:          judgedHost(r),
		BootID:          r.BootID,
		PidfdIno:        r.PidfdIno,
		PidNS:           r.PidNS,
	})
	reason := ReasonOwnerLive
	if judgedHost(r) == "" && !l.cfg.hostLocal {
		reason = ReasonOwnerUnprovenanced
	}
	return verdict{j, reason}
}

// judgedHost is the host id a record is judged by: owner_host_id, or the
// pidns_host_id of a holder in another pid namespace (locker.lockOwner)
// when the record also carries that namespace (pid_ns), so that the pid
// rules never read its pid in our namespace (liveness: a record from
// another pid namespace is unknown, alive). Without pid_ns a pidns_host_id
// names no host: the pid it comes with means nothing here.
func judgedHost(r *Record) string {
	if r.HostID != "" || r.PidNS == 0 {
		return r.HostID
	}
	return r.PidNSHostID
}

// kernelVerdict applies the OFD rule when it may: a record with our
// evidence fields, from this host (current or legacy id, in owner_host_id
// or, for a holder in another pid namespace, pidns_host_id) and this boot
// (the same kernel, whose lock table is the one asked), on a platform and
// filesystem that answer F_OFD_GETLK (kernelRule says which records; on
// Windows, those that claim the LockFileEx attestation, ofd_windows.go). The pid namespace does not matter
// here: every namespace of one kernel shares its lock table, and the
// question is about the very inode the bytes were read from.
//
// Accepting pidns_host_id steals from no one: only exactfs writes it, and
// only with the OFD lock held from before the bytes; a record from another
// host cannot carry our boot id (a random 128-bit value per boot) unless
// forged, and a forged record is no one's live lock; the kernel's "no
// lock" is the same proof whichever key named the host.
func (l *locker) kernelVerdict(r *Record, f *os.File) (verdict, bool) {
	if !kernelAttest || f == nil || !kernelRule(r, l.self.BootID) {
		return verdict{}, false
	}
	if h := r.Host(); (h == "" || !l.host.IsLocal(h)) && r.OfdSlot == 0 {
		return verdict{}, false
	}
	if r.OfdSlot != 0 {
		// The host id does not gate a slot record (kernelRule has already
		// required this boot's id). A boot id is 128 random bits the
		// kernel draws once per boot: no other machine and no earlier
		// boot of this one has it, so the record was written on this
		// running kernel, and its slot lock, if its writer holds it, is
		// in the very lock table slotHeldOn asks (through f, the inode the
		// bytes came from). Another config root, or a container with its
		// own machine id, gives another host id on the same kernel (root's
		// one-off exactfs lock in a service's directory): judged by the
		// host id, its holder stayed "alive (foreign host)" for good once
		// SIGKILLed. A record from another machine carrying our boot id
		// is forged, and a forged record is no one's live lock. Records
		// with another or no boot id keep the host rule (kernelRule
		// refuses them); a TypeScript record has no slot.
		// A kernel slot (SPEC §4.8.1): its byte alone attests the
		// holder; any other lock on the inode (a taker's, a waiter's) says
		// nothing about this one.
		held, known := slotHeldOn(f, r.OfdSlot)
		if !known {
			return verdict{}, false
		}
		if held {
			return verdict{liveness.Judgement{Verdict: liveness.Alive, Reason: "the holder's kernel slot lock on the record is held"}, ReasonOwnerLive}, true
		}
		return verdict{liveness.Judgement{Verdict: liveness.Dead, Reason: "no lock on the holder's kernel slot: its descriptor is gone"}, ""}, true
	}
	// The holder's range [0, queueBase) is the attestation's (on Windows
	// [2^39, 2^40), beyond the record: liveness/attest_windows.go).
	k, ok := liveness.Attested(f)
	if !ok {
		return verdict{}, false
	}
	if k.Verdict != liveness.Dead {
		return verdict{k, ReasonOwnerLive}, true
	}
	return verdict{k, ""}, true
}

// judgeMalformed applies the only rules under which a record that does
// not validate may be reclaimed: the historical released:false shape from a
// provably dead local owner at least 30 s old (the reference's rule); the
// power-loss rule (ours, beyond the reference): an empty or malformed
// record last written before the current boot cannot belong to a live
// process; and the abandoned-write rule below. Anything else is kept: it
// proves nothing about its writer, who may still be writing it.
//
// The abandoned-write rule (SPEC §4.4, decided 2026-12-03): an empty or
// torn record with one link that no process on this host has open for
// writing (the kernel's read-lease probe through f, the descriptor its
// bytes were read from, which answers only for our own files on local
// filesystems) has a dead writer, once it is old enough (abandonedAge).
// Every writer of a record holds a writable descriptor on it for as long as
// it is incomplete: the reference creates (O_EXCL) or opens (O_RDWR) it,
// truncates, writes and fsyncs through one handle and closes it only then;
// exactfs writes its records through the descriptor that holds its OFD
// lock. So the record a TypeScript peer killed between its truncate and its
// write leaves (in F.lock or in a claim's sidecar) is reclaimed instead of
// stranding the lock until someone runs exactfs recover. Readers do not
// count; a writer that opens it meanwhile changes nothing the removal is
// bound to (it removes exactly the judged bytes and inode).
func (l *locker) judgeMalformed(s *snapshot, f *os.File) verdict {
	if before, ok := writtenBeforeBoot(s.id.MtimeNs); ok && before {
		return verdict{liveness.Judgement{Verdict: liveness.Dead, Reason: "malformed record written before the current boot"}, ""}
	}
	if _, ok := historicalUnreleased(s.data); !ok && f != nil && s.id.Nlink == 1 {
		if min, how := abandonedAge(f, s.id); age(s.id) >= min {
			if w, _ := writerOf(f); w == exactfs.AnswerNo {
				return verdict{liveness.Judgement{Verdict: liveness.Dead,
					Reason: fmt.Sprintf("a record of %d bytes that does not parse, %s, open for writing by no process: its writer died while writing it", len(s.data), how)}, ""}
			}
		}
	}
	if r, ok := historicalUnreleased(s.data); ok {
		if age(s.id) < staleAge {
			return verdict{liveness.Judgement{Verdict: liveness.Alive, Reason: "released:false record younger than 30s"}, ReasonOwnerRecordFresh}
		}
		j := l.judge.Judge(liveness.Owner{Pid: int(r.Pid), StartTime: r.StartTime, StartTimeFormat: r.StartTimeFormat, HostID: r.HostID, BootID: r.BootID, PidfdIno: r.PidfdIno, PidNS: r.PidNS})
		if j.Verdict == liveness.Dead && r.HostID != "" {
			return verdict{j, ""}
		}
		return verdict{liveness.Judgement{Verdict: liveness.Alive, Reason: "released:false record: " + j.String()}, ReasonOwnerUnprovenanced}
	}
	if age(s.id) < staleAge {
		return verdict{liveness.Judgement{Verdict: liveness.Unknown, Reason: "malformed record, possibly still being written"}, ReasonOwnerRecordFresh}
	}
	return verdict{liveness.Judgement{Verdict: liveness.Unknown, Reason: "malformed record: " + s.perr.Error()}, ReasonOwnerUnprovenanced}
}

// Ages of the abandoned-write rule (judgeMalformed).
const (
	// abandonedRewriteAge: a record written after it was born (an in-place
	// rewrite, or a create whose write began) whose writer holds it open
	// no more is abandoned after a second.
	abandonedRewriteAge = time.Second
	// abandonedCreateAge: a record created and never written may belong to
	// a creator still inside its open(O_CREAT): the name is visible before
	// the descriptor counts as a writer for the lease probe. The
	// reference's stale window covers that.
	abandonedCreateAge = staleAge
)

// abandonedAge is how old a malformed record must be before the
// abandoned-write rule may reclaim it, and why: abandonedRewriteAge when
// its birth time (statx STATX_BTIME, read through f, the descriptor its
// bytes came from) is before its mtime, that is it was written after it was
// born; abandonedCreateAge when the two are equal (created, never written:
// a create and its write within one timestamp tick count as that too, the
// safe way), when its mtime is earlier than its birth (set back by hand), or
// when the filesystem gives no birth time.
func abandonedAge(f *os.File, id exactfs.Identity) (time.Duration, string) {
	btime, ok, err := exactfs.BirthTime(f)
	if err != nil || !ok {
		return abandonedCreateAge, "with no birth time to tell a rewrite from a create, at least 30s old"
	}
	if btime < id.MtimeNs {
		return abandonedRewriteAge, "written after it was created, at least 1s ago"
	}
	return abandonedCreateAge, "created and never written, at least 30s ago"
}

// abandonedLock is Recover's rule for F.lock: a record that does not parse
// (and is not the historical released:false shape, which Lock judges by
// its pid), at least staleAge old, with no kernel lock on it. Where the
// kernel cannot tell about locks, it must also be open for writing by no
// process (the lease probe): every exactfs holder writes its record
// through a writable descriptor it keeps, and a TypeScript writer keeps
// one while the record is incomplete. It returns the evidence, or "" to
// keep it; kept, when the rule holds but for an answer the kernel could
// not give (what was found and why it is kept).
func abandonedLock(c liveness.Captured) (evidence, kept string) {
	s := newSnapshot(c.Data, c.ID)
	held, known := heldOnIt(c.File)
	if held || s.rec != nil || age(s.id) < staleAge {
		return "", ""
	}
	if _, ok := historicalUnreleased(s.data); ok {
		return "", ""
	}
	found := fmt.Sprintf("malformed owner record of %d bytes, %s old", len(s.data), roundDur(age(s.id)))
	if !known {
		switch writer, why := writerOf(c.File); writer {
		case exactfs.AnswerNo:
		case exactfs.AnswerYes:
			return "", found + "; kept: " + why + ", and the kernel cannot tell here whether it holds a lock on it"
		default:
			return "", found + "; kept: " + why + ", nor whether a process holds a lock on it"
		}
	}
	return found + ", " + lockWords(known) + ": its writer died between creating and writing it", ""
}

// judgeOccupant is the acquisition's rule for the record it found at
// name when creating its own there failed (SPEC §4.2, §4.4; the sidecar's,
// with sidecar set, §4.3): s, captured through f, and distrust, why the
// file may not be adopted ("" when it may: distrust). j is the verdict
// liveness.Reclaim acts on (Dead: exact unlink of this version); v is the
// owner-record verdict (zero for a tombstone), for the caller's contention
// message; entomb asks the caller to rewrite a dead sidecar to a tombstone
// in place (entombSidecar) instead of removing it.
//   - a released tombstone is reused in place (Unknown: not removed),
//     unless it may not be adopted (another user's, extra links, the wrong
//     mode: trust.go): then it is replaced (Dead);
//   - otherwise the owner-record rules decide (judgeRecord), and a
//     malformed sidecar at least staleAge old is dead while we hold the
//     claim directory;
//   - a dead sidecar we may adopt is entombed, never unlinked.
func (l *locker) judgeOccupant(s *snapshot, f *os.File, distrust string, sidecar bool) (v verdict, j liveness.Judgement, entomb bool) {
	if s.released() && distrust != "" {
		// Never reused (trust.go): replaced, by the exact unlink of
		// this version and our own create.
		return v, liveness.Judgement{Verdict: liveness.Dead, Reason: "a released tombstone we may not reuse (" + distrust + "): replaced"}, false
	}
	if s.released() {
		return v, liveness.Judgement{Verdict: liveness.Unknown, Reason: "a released tombstone: reused, not removed"}, false
	}
	v = l.judgeRecord(s, f)
	if !v.dead() && sidecar && s.rec == nil && age(s.id) >= staleAge {
		// A malformed sidecar while we hold the claim directory: its
		// writer lost the claim long ago (the directory was removed by
		// recovery) and died before writing it.
		v.Judgement.Verdict, v.Judgement.Reason = liveness.Dead, "malformed sidecar older than 30s outside any claim"
	}
	if sidecar && distrust == "" && v.Judgement.Verdict == liveness.Dead {
		// Never unlinked: we hold the claim directory we just made, and
		// an unlink followed by our create leaves, should we be killed
		// in between, a fresh claim directory with no sidecar, which
		// nobody may break (only explicit recovery), so every peer
		// would wait on it. Rewritten in place to a tombstone instead
		// (entombSidecar: proved against these bytes), and then taken
		// as any tombstone is. The model found it
		// (internal/model BugSidecarUnlinkCreate).
		return v, liveness.Judgement{Verdict: liveness.Unknown, Reason: "a dead sidecar: rewritten in place, not removed"}, true
	}
	return v, v.Judgement, false
}

// ---- 2. The claim's sidecar F.lock.transition.owner (SPEC §4.3, §4.8) ----

// judgeSidecar judges the sidecar captured as s through f, the descriptor
// its bytes were read through: alive while an exactfs taker holds its
// kernel lock on it (it holds one for the whole claim, SPEC §4.8), dead
// when it is a released tombstone, else by the owner-record rules above
// (judgeRecord). held reports the kernel lock.
func (l *locker) judgeSidecar(s *snapshot, f *os.File) (v verdict, held bool) {
	held, _ = ofdHeld(f)
	switch {
	case held:
		return verdict{Judgement: liveness.Judgement{Verdict: liveness.Alive, Reason: "an exactfs taker holds its kernel lock"}}, true
	case s.released():
		return verdict{Judgement: liveness.Judgement{Verdict: liveness.Dead, Reason: "released tombstone"}}, false
	}
	return l.judgeRecord(s, f), false
}

// ---- 3. The claim directory F.lock.transition (SPEC §4.3) ----

// claimMinAge: a claim directory younger than this is never judged. Its
// taker makes the directory and then writes the sidecar; until it has, the
// sidecar still shows whatever the previous taker left (a tombstone, or a
// dead record that a half-finished reclaim did not remove yet), which says
// nothing about the new taker. A live taker is past that step within
// milliseconds. The same one second is the reference's tombstone rule.
const claimMinAge = time.Second

// claimEvidence is what the crashed-claim rule (judgeClaimDir) decides
// on, all captured by inspectClaim: the claim directory's exact tree, its
// sidecar and the sidecar's verdict (judgeSidecar), and their ages
// (claimAges).
type claimEvidence struct {
	tree        *exactfs.Tree
	treeErr     error     // the tree could not be captured exactly
	side        *snapshot // nil when absent or unreadable
	sideVerdict verdict
	sideText    string // sideVerdict for people
	held        bool   // a kernel lock is held on the sidecar
	dirAge      time.Duration
	sideAge     time.Duration
}

// judgeClaimDir is the crashed-claim rule (the TypeScript reference has
// none: it strands such a claim), our kernel-lock and power-loss rules
// included. A claim is stale when:
//   - the directory is empty (an exact tree snapshot proves it) and at least
//     claimMinAge old, no OFD lock is held on the sidecar (an exactfs taker
//     holds one for the whole claim), and the sidecar either names a dead,
//     host-qualified owner or is a tombstone at least one second old (the
//     holder died between releasing the sidecar and the rmdir), or is
//     malformed and dead by the abandoned-write or power-loss rule
//     (judgeMalformed); or
//   - the directory was made before the current boot (its taker is gone,
//     whatever the sidecar says).
//
// A claim directory without a readable sidecar is never broken
// automatically; Recover can, with evidence. why says, for people, why the
// claim is stale or kept.
func judgeClaimDir(e claimEvidence) (stale bool, why string) {
	s, v := e.side, e.sideVerdict
	switch {
	case e.treeErr != nil:
		return false, "the claim cannot be described exactly: " + e.treeErr.Error()
	case len(e.tree.Entries) != 1:
		return false, "the claim directory is not empty; it is never removed automatically"
	case beforeBoot(e.tree.Root().MtimeNs):
		return true, "the claim directory was made before the current boot"
	case e.dirAge < claimMinAge:
		return false, "the claim is younger than 1s"
	case s == nil:
		return false, "no readable sidecar; only explicit recovery can remove this claim"
	case e.held:
		return false, "held: " + e.sideText
	case s.released() && e.sideAge >= claimMinAge:
		return true, "the sidecar is a tombstone at least 1s old: the holder died before removing the claim"
	case s.released():
		return false, "the sidecar tombstone is younger than 1s"
	case v.dead() && s.rec != nil && s.rec.HostID != "":
		return true, "the sidecar's owner is dead: " + e.sideText
	case v.dead() && s.rec == nil:
		return true, "the sidecar is malformed: " + v.Reason
	}
	return false, "the sidecar's owner is not provably dead: " + e.sideText
}

// beforeBoot reports whether mtimeNs is provably before the current boot
// (writtenBeforeBoot; false where the boot time is unknown).
func beforeBoot(mtimeNs int64) bool {
	b, ok := writtenBeforeBoot(mtimeNs)
	return ok && b
}

// futureSeen remembers when this process first saw each claim version
// whose directory or sidecar mtime is in the future (claimVersion -> the
// time of that first look, monotonic). See claimAges.
var (
	futureMu   sync.Mutex
	futureSeen = map[claimVersion]time.Time{}
)

// claimVersion is one version of a claim: its directory and its sidecar
// (zero when unreadable), each down to its bytes and times.
type claimVersion struct {
	dir  exactfs.Identity
	side exactfs.Identity
}

// claimAges returns the ages the crashed-claim rules go by: the
// directory's and the sidecar's (0 without one) mtime ages, or, when
// either mtime is ahead of the clock (the clock was stepped back after
// they were written), how long this process has seen exactly this claim
// version, unchanged. The rules need only "no taker has touched it for a
// second" (claimMinAge): a live taker writes and locks its sidecar within
// microseconds of making the directory, and that write is a new version.
// An mtime in the future says nothing about when it was written, so it is
// replaced by an observation: a claim seen unchanged for claimMinAge, no
// kernel lock on its sidecar, is as old as the rules need, whatever the
// clock said when it was written. future reports the substitution.
func claimAges(dir exactfs.Identity, side *snapshot) (dirAge, sideAge time.Duration, future bool) {
	dirAge = age(dir)
	var sid exactfs.Identity
	if side != nil {
		sid = side.id
		sideAge = age(sid)
	}
	if dirAge >= 0 && sideAge >= 0 {
		return dirAge, sideAge, false
	}
	v := claimVersion{dir: dir, side: sid}
	v.dir.CtimeNs, v.side.CtimeNs = 0, 0 // a neighbour's rename touches ctime
	futureMu.Lock()
	first, ok := futureSeen[v]
	if !ok {
		if len(futureSeen) >= 64 {
			clear(futureSeen) // a bound on a table that only crashed claims fill
		}
		first = time.Now()
		futureSeen[v] = first
	}
	futureMu.Unlock()
	seen := time.Since(first)
	return seen, seen, true
}

// futureWhy explains the substitution of claimAges for people.
func futureWhy(dir exactfs.Identity, side *snapshot, seen time.Duration) string {
	ahead := -age(dir)
	if side != nil && -age(side.id) > ahead {
		ahead = -age(side.id)
	}
	return fmt.Sprintf("its modification time is %s in the future (the clock was stepped back?), so its age is how long "+
		"it has been seen unchanged: %s", roundDur(ahead), roundDur(seen))
}

// emptyTree accepts the detached tree of a claim: an empty directory.
func emptyTree(t *exactfs.Tree) bool { return len(t.Entries) == 1 }

// judgeSupersededClaim judges a regular file at F.lock.transition, the
// claim of a superseded protocol, by the owner-record rules (judgeRecord);
// a released tombstone there is left for explicit cleanup, as the
// reference does.
func (l *locker) judgeSupersededClaim(c liveness.Captured) liveness.Judgement {
	s := newSnapshot(c.Data, c.ID)
	if s.released() {
		return liveness.Judgement{Verdict: liveness.Unknown, Reason: "a released tombstone, left for explicit cleanup"}
	}
	return l.judgeRecord(s, c.File).Judgement
}

// claimRecoverable is the first step of Recover's rule for a crashed
// claim that automatic reclaim refuses (judgeCrashedClaim): an empty
// claim directory (inspectClaim's exact tree) whose sidecar is missing or
// does not parse, at least RecoverClaimAge old. dirAge is its age.
func claimRecoverable(cs claimState) (dirAge time.Duration, ok bool) {
	if cs.side != nil && cs.side.rec != nil {
		return 0, false
	}
	if a := age(cs.tree.Root()); a >= RecoverClaimAge {
		return a, true
	}
	return 0, false
}

// recoverSidecar is what Recover found at the sidecar of a claim that
// claimRecoverable accepts: its capture (s, or err), and the kernel's
// answers through the descriptor it was read from: a kernel lock on it
// (held; known: the kernel could tell), a writer (writer, writerWhy).
type recoverSidecar struct {
	s           *snapshot
	err         error
	held, known bool
	writer      exactfs.Answer
	writerWhy   string
}

// judgeCrashedClaim is Recover's rule for a claim directory dirAge old
// that claimRecoverable accepts, by its sidecar (look). Its taker makes
// the directory and writes the sidecar within milliseconds, so with no
// sidecar at all the taker is dead (evidence: remove the claim). A
// malformed sidecar must be at least RecoverClaimAge old, with no kernel
// lock on it and open for writing by no process (its taker, alive, would
// be writing it): then the claim and the sidecar (side) are removed. Where
// the kernel cannot tell about a writer the claim is kept (kind
// KindKeepClaim, with how to remove it by hand). ok false: nothing to do
// (held, being written, too young, or the sidecar cannot be read).
func (l *locker) judgeCrashedClaim(dirAge time.Duration, look recoverSidecar) (kind, evidence string, side *snapshot, ok bool) {
	evidence = fmt.Sprintf("empty claim directory %s old with ", roundDur(dirAge))
	switch s := look.s; {
	case look.err != nil && errors.Is(look.err, fs.ErrNotExist):
		return "remove-claim", evidence + "no sidecar", nil, true
	case look.err != nil:
		return "", "", nil, false
	case look.held || look.writer == exactfs.AnswerYes || age(s.id) < RecoverClaimAge:
		// A sidecar a process still has open for writing is being
		// written, however old the claim looks: its taker is alive. Every
		// exactfs taker also keeps it open for writing (it writes through
		// the descriptor of its lock), so No covers an unknown lock too.
		return "", "", nil, false
	case look.writer != exactfs.AnswerNo:
		return KindKeepClaim, evidence + fmt.Sprintf("a malformed sidecar of %d bytes, %s old; kept: %s, so its taker may be alive and writing it. "+
			"If no process has %s open (check with lsof), remove both by hand: rmdir %s && rm %s",
			len(s.data), roundDur(age(s.id)), look.writerWhy, l.path(l.sidecar), l.path(l.claim), l.path(l.sidecar)), nil, true
	default:
		return "remove-claim", evidence + fmt.Sprintf("a malformed sidecar of %d bytes, %s old, %s", len(s.data), roundDur(age(s.id)), lockWords(look.known)), s, true
	}
}

// ---- 4. A legacy directory lock F.lock/ (SPEC §4.5) ----

// legacyJudgement is the verdict on a legacy F.lock/ directory and its
// evidence, for reclaim and for Inspect.
type legacyJudgement struct {
	stale  bool
	why    string
	holder string
}

// judgeLegacy renders the legacy-directory verdict on the captured tree: stale
// only if info parses, its owner is host-qualified as local (or the
// host-local option vouches for an unqualified one) and provably dead; or if
// the directory is empty and older than 30 s. The info bytes judged must be
// the very file the tree snapshot holds (same inode and digest), so the
// verdict speaks for that snapshot and nothing else.
func (l *locker) judgeLegacy(tree *exactfs.Tree) legacyJudgement {
	if len(tree.Entries) == 1 {
		if a := age(tree.Root()); a >= staleAge {
			return legacyJudgement{stale: true, why: fmt.Sprintf("empty legacy directory, %s old", roundDur(a))}
		}
		return legacyJudgement{why: "empty legacy directory younger than 30s", holder: "an empty legacy lock directory"}
	}
	var info *exactfs.TreeEntry
	for i := range tree.Entries {
		if tree.Entries[i].Path == "info" {
			info = &tree.Entries[i]
		}
	}
	if info == nil || !info.Identity.Mode.IsRegular() {
		return legacyJudgement{why: "legacy directory without an info file", holder: "a legacy lock directory without info"}
	}
	data, id, err := l.dir.CaptureRecord(l.lockName + "/info")
	if err != nil || !id.SameContent(info.Identity) {
		return legacyJudgement{why: "legacy info changed or unreadable", holder: "a legacy lock directory"}
	}
	li, err := parseLegacyInfo(data)
	if err != nil {
		return legacyJudgement{why: err.Error(), holder: "a legacy lock directory with malformed info"}
	}
	j := l.judge.Judge(liveness.Owner{Pid: int(li.Pid), StartTime: li.StartTime, StartTimeFormat: li.StartTimeFormat, HostID: li.HostID})
	holder := fmt.Sprintf("legacy directory of pid %d (%s)", li.Pid, j)
	return legacyJudgement{stale: j.Verdict == liveness.Dead, why: j.String(), holder: holder}
}

// legacyDetached accepts what an interrupted removal of a legacy directory
// leaves detached: the directory, with its info file or without it.
func legacyDetached(t *exactfs.Tree) bool {
	for _, e := range t.Entries[1:] {
		if e.Path != "info" {
			return false
		}
	}
	return true
}

// ---- 5. Crash residue (SPEC §5.4, §2.7) ----

// stateResidue reports whether r is staging or temp residue that the
// sweep judges: F's own, and that of the lock's records (an owner record or
// sidecar staged by publishRecord whose creator died before the rename;
// the creator holds its descriptor, with the OFD lock, from the create on,
// so "open nowhere" proves it dead just the same).
func (l *locker) stateResidue(r Residue) bool {
	switch r.Kind {
	case "temp":
		return true
	case "staging":
		dest, _ := exactfs.StagingTarget(r.Name)
		return dest == l.base || dest == l.lockName || dest == l.sidecar
	}
	return false
}

// residueFloor is the least size bound of residue the sweep reads
// (residueBound).
const residueFloor = 64 << 20

// residueBound is the largest staging or temp file of F the sweep will
// capture: a writer's residue is a copy of a version of F, or a record, so
// nothing we write is much larger than F is now unless F shrank. The bound
// is four times F's current size, and never less than residueFloor (an
// update that shrank F a lot, a TypeScript peer's larger version). A
// larger file is kept and reported, unread: the sweep runs under the lock,
// and reading another writer's gigabyte there would hold every process of
// F behind it.
func (l *locker) residueBound() int64 {
	bound := int64(residueFloor)
	if st, err := l.dir.LstatRaw(l.base); err == nil && st.Size > bound/4 {
		bound = 4 * st.Size
	}
	return bound
}

// prejudgeResidue keeps r on what an lstat already says, before a byte of
// it is read: another user's file (kept whatever its bytes: trust.go), a
// hard link, anything but a regular file, or a file larger than
// residueBound. Capturing first let another uid's planted 1 GiB sparse
// file named like our staging residue be read whole under the lock by
// every process's first acquisition (22 s and 2.6 GB per update). Keeping
// is always safe; a file that passes here is judged again, on the
// captured descriptor (judgeStateResidue), so a file that changes between
// the lstat and the capture gains nothing.
func (l *locker) prejudgeResidue(r Residue) string {
	st, err := l.dir.LstatRaw(r.Name)
	if err != nil {
		return "" // the capture reports it (not_found, ...)
	}
	if why := l.foreignOwner(st.Uid); why != "" {
		return why + ": another user's file is never removed (trust.go), nor read"
	}
	switch {
	case st.Mode&fs.ModeSymlink != 0:
		return "a symlink: never followed or removed"
	case !st.Mode.IsRegular():
		return "not a regular file"
	case st.Nlink != 1:
		return fmt.Sprintf("hard-linked (%d links): its other names would keep the bytes", st.Nlink)
	}
	if b := l.residueBound(); st.Size > b {
		return fmt.Sprintf("%d bytes, larger than anything a writer of this state file leaves (at most %d: four times the state file, at least %d MiB); "+
			"not read under the lock: remove it by hand once you know its writer is gone", st.Size, b, residueFloor>>20)
	}
	return ""
}

// judgeStateResidue proves what it can about r, captured as c (its bytes
// and identity, and the descriptor the kernel is asked through): "" when
// it may be removed, or why it must be kept.
func (l *locker) judgeStateResidue(r Residue, c liveness.Captured) string {
	id := c.ID
	if why := l.foreignFile(c.File); why != "" {
		return why + ": another user's file is never removed (trust.go)"
	}
	if id.Nlink != 1 {
		return fmt.Sprintf("hard-linked (%d links): its other names would keep the bytes", id.Nlink)
	}
	if fi, err := l.dir.Lstat(l.base); err == nil {
		if cur, ok := fi.Sys().(exactfs.Identity); ok && cur.SameInode(id) {
			return "it is the current state file"
		}
	}
	why, err := exactfs.ProbeUnopened(c.File)
	if err != nil {
		return "the kernel's open-file probe failed: " + err.Error()
	}
	if why != "" {
		return why
	}
	if r.Kind == "temp" {
		pid := l.tempPid(r.Name)
		if dead, why := l.pidGone(pid); !dead {
			return fmt.Sprintf("its writer, pid %d, is not provably dead (%s)", pid, why)
		}
	}
	return ""
}

// pidGone reports whether no live process has pid: kill(pid, 0) says
// ESRCH, or the process is a zombie.
func (l *locker) pidGone(pid int) (bool, string) {
	var p liveness.Prober = liveness.System{}
	if l.judge.Probe != nil {
		p = l.judge.Probe
	}
	err := p.Signal(pid)
	if errors.Is(err, syscall.ESRCH) {
		return true, ""
	}
	if z, zerr := p.Zombie(pid); zerr == nil && z {
		return true, ""
	}
	if err != nil {
		return false, err.Error()
	}
	return false, "the pid exists"
}

// residueEvidence is Recover's rule for a residue file of the given kind:
// why it is provably safe to remove, or "" to keep it. No kernel lock may
// be held on it, it must have one link and be RecoverResidueAge old.
func residueEvidence(kind string, c liveness.Captured) string {
	held, known := heldOnIt(c.File)
	data, id := c.Data, c.ID
	if held || id.Nlink != 1 || age(id) < RecoverResidueAge {
		return ""
	}
	switch kind {
	case "placeholder":
		if len(data) != 0 {
			return ""
		}
		return fmt.Sprintf("empty single-link placeholder, %s old", roundDur(age(id)))
	case "quarantine":
		// A quarantined record was detached from F.lock by an exact unlink
		// that did not finish, or (off Linux) staged by a creator that died
		// before publishing it (create_other.go); nobody holds a lock
		// through this name either way.
		if _, err := ParseRecord(data); err != nil && len(data) != 0 {
			return ""
		}
		return fmt.Sprintf("%s, %s old", quarantineOrigin(data), roundDur(age(id)))
	case "staging":
		// An owner record staged for publishing whose creator died before
		// the rename: no kernel lock is held on it any more. Where the
		// kernel cannot tell, its creator (which writes it through the
		// descriptor it would lock) must have it open no more.
		if !known {
			if w, _ := writerOf(c.File); w != exactfs.AnswerNo {
				return ""
			}
		}
		return fmt.Sprintf("unpublished owner record, %s old, %s", roundDur(age(id)), lockWords(known))
	}
	return ""
}

// recoverVerdict turns a recovery rule's evidence into the verdict Reclaim
// acts on: Dead (remove) when there is evidence and the caller does not
// keep it anyway (a dry run, a look).
func recoverVerdict(evidence string, keep bool) liveness.Judgement {
	if evidence == "" || keep {
		return liveness.Judgement{Verdict: liveness.Unknown, Reason: "kept"}
	}
	return liveness.Judgement{Verdict: liveness.Dead, Reason: evidence}
}

// sameAs is the verdict on a record Recover judged before: Dead (remove it)
// when c is that very version, Unknown (keep it) otherwise.
func sameAs(c liveness.Captured, judged exactfs.Identity) liveness.Judgement {
	if !sameRecord(c.ID, judged) {
		return liveness.Judgement{Verdict: liveness.Unknown, Reason: "changed since it was judged"}
	}
	return liveness.Judgement{Verdict: liveness.Dead, Reason: "the version judged"}
}

// moveAside is what is at a move's private name: its lstat (never
// following a symlink) and, for a directory, its exact tree.
type moveAside struct {
	st   exactfs.RawStat
	lerr error
	tree *exactfs.Tree // nil unless st is a directory
	terr error
}

// judgeMoveAside is the rule for the directory at a move's private name
// (exactfs.MovePrefix: Dir.MoveEmptyDir renames the proved empty directory
// there, then on to its destination; a mover killed between the two
// renames leaves it), captured by captureMoveAside. The same rules as the other
// private residue (SPEC §5.4): it must be ours or the directory owner's
// (foreignOwner: the sticky-directory owner rule), a directory (a symlink
// is never followed, a file never removed), empty, and at least
// RecoverResidueAge old by its mtime, which the mover set to the time of
// the move. evidence says why Recover may remove it; otherwise kept says
// why it stays ("" when it is gone).
func (l *locker) judgeMoveAside(m moveAside) (evidence, kept string) {
	st, tree := m.st, m.tree
	switch {
	case m.lerr != nil:
		return "", "cannot be looked at: " + m.lerr.Error()
	case st.Mode&fs.ModeSymlink != 0:
		return "", "a symlink: never followed or removed"
	case !st.Mode.IsDir():
		return "", "not a directory: a move leaves only a directory there; remove it by hand once you know what it is"
	case m.terr != nil:
		return "", "the directory cannot be described exactly: " + m.terr.Error()
	}
	root := tree.Root()
	if root.Dev != st.Dev || root.Ino != st.Ino {
		return "", "it changed while it was looked at"
	}
	if why := l.foreignOwner(root.Uid); why != "" {
		return "", why + ": another user's directory is never removed (trust.go)"
	}
	if n := len(tree.Entries) - 1; n != 0 {
		return "", fmt.Sprintf("not empty (%d entries): a move takes only an empty directory, so something wrote into it; "+
			"it is never removed automatically: look at it and remove it by hand", n)
	}
	if a := age(root); a < RecoverResidueAge {
		return "", fmt.Sprintf("%s old: a move may still be on its way through it (removed once it is %s old)", roundDur(a), RecoverResidueAge)
	}
	return fmt.Sprintf("empty directory left by an exact directory move killed between its two renames, %s old", roundDur(age(root))), ""
}
