package statelock

import (
	"fmt"
	"os"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

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

// describe says who holds a record, for people: "pid 4242 on this host
// (alive: process exists; start time matches) since 12s".
func (l *locker) describe(s *snapshot, v verdict) string {
	return l.describeWho(s, v) + " since " + roundDur(age(s.id)).String()
}

// describeWho is describe without the age.
func (l *locker) describeWho(s *snapshot, v verdict) string {
	if s.rec == nil {
		return fmt.Sprintf("an unreadable owner record of %d bytes (%s: %s)", len(s.data), v.Verdict, v.Reason)
	}
	r := s.rec
	where := "on an unnamed host"
	switch {
	case r.HostID == "" && r.PidNSHostID != "" && l.host.IsLocal(r.PidNSHostID) && r.PidNS != 0 && r.PidNS == l.self.PidNS:
		where = "on this host, in our pid namespace (not the host's initial one)"
	case r.HostID == "" && r.PidNSHostID != "" && l.host.IsLocal(r.PidNSHostID):
		where = "in another pid namespace on this host"
	case r.HostID == "" && r.PidNSHostID != "":
		where = "in another pid namespace on an unnamed host"
	case r.HostID == "":
	case r.HostID == l.host.ID:
		where = "on this host"
	case l.host.IsLocal(r.HostID):
		where = "on this host (legacy id)"
	default:
		id := r.HostID
		if len(id) > 12 {
			id = id[:12] + "…"
		}
		where = "on host " + id
	}
	return fmt.Sprintf("pid %d %s (%s: %s)", r.Pid, where, v.Verdict, v.Reason)
}
