package liveness

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Verdict is the answer to "is the owner of a record gone?".
//
// The zero value is Unknown, so a Judgement that was never filled in keeps
// the lock instead of authorizing a reclaim.
type Verdict int

const (
	// Unknown: the system declined to answer or the evidence cannot be
	// compared. It counts as alive: a probe the kernel refused is not
	// evidence of death.
	Unknown Verdict = iota
	// Alive: the owner exists or cannot be proved gone.
	Alive
	// Dead: the owner is provably gone. The only verdict that authorizes a
	// reclaim.
	Dead
)

// String returns "dead", "alive" or "unknown".
func (v Verdict) String() string {
	switch v {
	case Dead:
		return "dead"
	case Alive:
		return "alive"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Judgement is a verdict with the reason for it, a short phrase for people
// ("pid reused: start time differs").
type Judgement struct {
	Verdict Verdict
	Reason  string
}

// String returns the verdict and its reason, as in "dead (no such process
// (ESRCH))".
func (j Judgement) String() string {
	return j.Verdict.String() + " (" + j.Reason + ")"
}

// Owner is what a record says about the process that holds it. Empty strings
// and zero numbers mean the record does not carry that evidence.
type Owner struct {
	Pid             int
	StartTime       string
	StartTimeFormat string
	HostID          string
	BootID          string
	PidfdIno        uint64
	PidNS           uint64
	CreateTime      uint64 // Windows process creation time (Evidence.CreateTime)
}

// Owner returns the owner record for e written on the host hostID.
func (e Evidence) Owner(hostID string) Owner {
	return Owner{
		Pid:             e.Pid,
		StartTime:       e.StartTime,
		StartTimeFormat: e.StartTimeFormat,
		HostID:          hostID,
		BootID:          e.BootID,
		PidfdIno:        e.PidfdIno,
		PidNS:           e.PidNS,
		CreateTime:      e.CreateTime,
	}
}

// Prober is the set of system probes a Judge uses. Tests substitute it to
// make the kernel answer what a race or another user would make it answer.
// Embed System and override only the probes of interest: methods may be
// added to this interface, and an embedded System keeps them real.
type Prober interface {
	// Signal performs kill(pid, 0) and returns its error, which wraps the
	// errno (syscall.ESRCH, syscall.EPERM, ...).
	Signal(pid int) error
	// Zombie reports whether pid has exited and waits to be reaped.
	Zombie(pid int) (bool, error)
	// StartTime reads the start time of pid in the given format, as the
	// process itself would read it, or fails when the two readings are not
	// comparable.
	StartTime(pid int, format string) (string, error)
	// PidfdIno returns the pidfd inode of pid, or 0 where unsupported.
	PidfdIno(pid int) (uint64, error)
	// BootID returns the current boot id.
	BootID() (string, error)
	// PidNS returns the inode of the judging process's pid namespace.
	PidNS() (uint64, error)
	// CreateTime returns the creation time of pid (Windows), or 0 where
	// the platform has none.
	CreateTime(pid int) (uint64, error)
	// Nested reports whether a process of a pid namespace nested below
	// ours is known there as pid and started at startTime (linux-proc-v1),
	// or fails when that cannot be ruled out. False where the platform
	// has no pid namespaces.
	Nested(pid int, startTime string) (bool, error)
}

// System is the Prober that asks the running system.
type System struct{}

// Signal performs kill(pid, 0).
func (System) Signal(pid int) error {
	if err := checkPid(pid); err != nil {
		return err
	}
	return signal0(pid)
}

// Zombie reports whether pid is a zombie.
func (System) Zombie(pid int) (bool, error) {
	if err := checkPid(pid); err != nil {
		return false, err
	}
	return zombie(pid)
}

// StartTime calls StartTimeAs, after checking that a FormatLinuxProc value
// read here is what the process would read itself: /proc shows start times
// shifted by the reader's time namespace offset, so across time namespaces
// the values differ for one and the same process.
func (System) StartTime(pid int, format string) (string, error) {
	if format == FormatLinuxProc {
		if err := checkPid(pid); err != nil {
			return "", err
		}
		if err := sameProcClock(pid); err != nil {
			return "", err
		}
	}
	return StartTimeAs(pid, format)
}

// PidfdIno calls the package function PidfdIno.
func (System) PidfdIno(pid int) (uint64, error) { return PidfdIno(pid) }

// BootID calls the package function BootID.
func (System) BootID() (string, error) { return BootID() }

// PidNS returns the pid namespace inode of the calling process.
func (System) PidNS() (uint64, error) { return PidNS(os.Getpid()) }

// CreateTime calls the package function CreateTime.
func (System) CreateTime(pid int) (uint64, error) { return CreateTime(pid) }

// Nested looks through /proc for a process of a nested pid namespace known
// there as pid, with the start time startTime.
func (System) Nested(pid int, startTime string) (bool, error) {
	if err := checkPid(pid); err != nil {
		return false, err
	}
	return nestedOwner(pid, startTime)
}

// Judge decides whether recorded owners are gone (see the package
// documentation for what proves it).
type Judge struct {
	// Host is this host's identity; records naming another host are never
	// judged by local probes. A zero Host recognizes no record as local.
	Host HostIdentity
	// HostLocal declares that the directory holding the records is never
	// shared with another machine, so a record without a host id was
	// written here and may be judged by its pid.
	HostLocal bool
	// Probe answers the system questions; nil means System.
	Probe Prober
}

func (j *Judge) probe() Prober {
	if j.Probe == nil {
		return System{}
	}
	return j.Probe
}

func dead(reason string) Judgement    { return Judgement{Dead, reason} }
func alive(reason string) Judgement   { return Judgement{Alive, reason} }
func unknown(reason string) Judgement { return Judgement{Unknown, reason} }

// Judge returns the verdict for o. The rules run in this order, and the
// first that decides wins:
//
//  1. no host id in the record: Alive, unless HostLocal;
//  2. a host id that is neither Host.ID nor Host.LegacyID: Alive;
//  3. a pid that is not a single process id (<= 0, beyond pid_t): Unknown;
//  4. a recorded boot id other than the current one: Dead;
//  5. a recorded pid namespace other than ours, or ours unreadable: Unknown;
//  6. kill(pid, 0): ESRCH is Dead, EPERM means the pid exists (go on),
//     any other error is Unknown;
//  7. the pid is a zombie: Dead;
//  8. a recorded pidfd inode other than the live one: Dead; the same one,
//     in a boot proved the same by rule 4: Alive;
//  9. a recorded creation time (Windows) other than the live one: Dead;
//     the same one: Alive;
//  10. a recorded start time other than the live one read in the same
//     format: Dead;
//  11. otherwise Alive (the start time matches, or it is "unknown",
//     unreadable, without a format or in a format this host cannot read).
//
// Before a Dead of rules 6, 7 or 10 for a record without a pid namespace
// (the TypeScript reference's), whose start time is a linux-proc-v1 count
// (or has no format), a process of a pid namespace nested below ours
// known there by the recorded pid, with the recorded start time, turns it
// into Unknown: the record's writer may be such a process (a container
// sharing the directory and the host identity), whose pid means nothing in
// our namespace. A search that cannot be made is Unknown too.
//
// Dead is returned only when a probe proved it.
func (j *Judge) Judge(o Owner) Judgement {
	p := j.probe()

	// A record that does not say which host wrote it may come from another
	// machine on a shared volume, where a local "no such process" proves
	// nothing.
	if o.HostID == "" {
		if !j.HostLocal {
			return alive("record has no host id")
		}
	} else if !j.Host.IsLocal(o.HostID) {
		// Pids, start times and boots are host-local facts.
		return alive("foreign host")
	}

	if err := checkPid(o.Pid); err != nil {
		// kill(0, 0) or kill(-1, 0) would probe process groups and
		// answer for the wrong processes.
		return unknown("invalid pid in record")
	}

	// Every process of an earlier boot is gone. Checked before any probe of
	// the pid, which in this boot may name anything. An unreadable current
	// boot id proves nothing, so the rule is skipped.
	sameBoot := false
	if o.BootID != "" {
		cur, err := p.BootID()
		if err == nil && cur != "" && cur != o.BootID {
			return dead("recorded boot differs")
		}
		sameBoot = err == nil && cur == o.BootID
	}

	// A pid means something only in the namespace that assigned it; in
	// ours, kill(pid, 0) could say ESRCH for a live owner in a container
	// sharing the volume. Decided before any probe of the pid.
	if o.PidNS != 0 {
		ours, err := p.PidNS()
		if err != nil || ours == 0 {
			return unknown("pid namespace unverifiable")
		}
		if ours != o.PidNS {
			return unknown("other pid namespace")
		}
	}

	// From here on every Alive says why the pid counts as existing.
	exists := "process exists"
	switch err := p.Signal(o.Pid); {
	case err == nil:
	case errors.Is(err, syscall.ESRCH):
		return deadUnlessNested(p, o, "no such process (ESRCH)")
	case errors.Is(err, syscall.EPERM):
		// The pid exists under another user or sandbox. That is not proof
		// that it is still our owner: a reused pid can belong to anyone,
		// so the identity checks below still run (they need no signal
		// permission), as the TypeScript peers run their start time check.
		exists = "EPERM: process exists under another user"
	default:
		return unknown("kill(pid, 0) failed: " + err.Error())
	}

	// kill(pid, 0) succeeds on a zombie, but a zombie has exited and can
	// hold nothing. An unreadable state proves nothing either way.
	if z, err := p.Zombie(o.Pid); err == nil && z {
		return deadUnlessNested(p, o, "zombie")
	}

	// A pidfs inode names one process for the life of the boot: a different
	// inode at the recorded pid proves the pid was reused, even when the new
	// process got the same start time (10 ms ticks make that common). An
	// equal inode proves the same process only within one boot, so without
	// a verified boot id the start time still gets its say; with one, the
	// start time is not consulted, since readers in different time
	// namespaces see different start times for the same process. A failed
	// pidfd_open, even ESRCH, is no evidence: kill(pid, 0) is the one probe
	// of existence, and a probe that contradicts it means a race.
	if o.PidfdIno != 0 {
		if ino, err := p.PidfdIno(o.Pid); err == nil && ino != 0 {
			if ino != o.PidfdIno {
				return dead("pid reused: pidfd inode differs")
			}
			if sameBoot {
				return alive(exists + "; same process (pidfd inode and boot match)")
			}
		}
	}

	// On Windows the creation time names one process with its pid (a pid
	// is freed only when the last handle on its process closes, and the
	// next process to get it is created later), so a different one at the
	// recorded pid proves reuse. An equal one is the same process, or one
	// created within the same tick of the system clock at the same pid:
	// Alive, which keeps the lock, the safe side. An unreadable one (an
	// open refused) is no evidence either way.
	if o.CreateTime != 0 {
		if ct, err := p.CreateTime(o.Pid); err == nil && ct != 0 {
			if ct != o.CreateTime {
				return dead("pid reused: creation time differs")
			}
			return alive(exists + "; same process (creation time matches)")
		}
	}

	// A start time proves reuse only when compared with one read the same
	// way; "unknown", a legacy record without a format, or a format this
	// host cannot read leave the pid's owner possibly alive.
	switch {
	case o.StartTime == "" || o.StartTime == UnknownStartTime:
		return alive(exists + "; start time unknown")
	case o.StartTimeFormat == "":
		return alive(exists + "; start time has no format")
	case o.StartTimeFormat != FormatLinuxProc && o.StartTimeFormat != FormatPsUTC:
		return alive(exists + "; start time format " + o.StartTimeFormat + " not understood")
	}
	cur, err := p.StartTime(o.Pid, o.StartTimeFormat)
	if err != nil {
		return alive(exists + "; start time unreadable")
	}
	if cur != o.StartTime {
		return deadUnlessNested(p, o, "pid reused: start time differs")
	}
	return alive(exists + "; start time matches")
}

// deadUnlessNested returns Dead for why, unless o's writer may be a process
// of a nested pid namespace (see Judge).
func deadUnlessNested(p Prober, o Owner, why string) Judgement {
	if o.PidNS != 0 || o.StartTime == "" || o.StartTime == UnknownStartTime ||
		(o.StartTimeFormat != "" && o.StartTimeFormat != FormatLinuxProc) {
		return dead(why)
	}
	found, err := p.Nested(o.Pid, o.StartTime)
	switch {
	case err != nil:
		return unknown(why + " here, but other pid namespaces could not be searched for the owner: " + err.Error())
	case found:
		return unknown(why + " here, but a process of a nested pid namespace has the recorded pid and start time")
	}
	return dead(why)
}
