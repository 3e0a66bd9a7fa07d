package statelock

import (
	"fmt"
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
