package statelock

import (
	"fmt"
	"os"
)

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
	if who := l.ownKept(r); who != "" {
		return who
	}
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

// ownKept describes r when it is the record this process keeps after its
// caller released the lock because its background release found the
// transition claim busy (sticky.go, keepBusy): naming "pid N on this host
// (alive)" there, N our own pid, told a TryLock of this process that some
// process holds the lock its own caller had just released. A record kept
// for a re-lock (no busy claim) is named as this process's too; a Lock
// meets it only where it may not take it back (during a yield to a
// reference contender, or under another config root). "" otherwise.
func (l *locker) ownKept(r *Record) string {
	if r.Pid != int64(os.Getpid()) {
		return ""
	}
	e := l.stickyFor(false)
	if e == nil {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.r == nil || e.r.rec == nil || e.r.rec.Token != r.Token {
		return ""
	}
	if !e.retry {
		return fmt.Sprintf("this process (pid %d), which keeps the lock its caller released for at most %s (sticky ownership) and lets it go in the background", r.Pid, e.stickyIdle)
	}
	return fmt.Sprintf("this process (pid %d): its caller released the lock, and the release waits for the transition claim, "+
		"which another process holds (most likely a TypeScript contender's attempt); the lock is let go as soon as the claim is free", r.Pid)
}
