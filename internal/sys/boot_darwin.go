package sys

import (
	"time"

	"golang.org/x/sys/unix"
)

// BootSession identifies the current boot: kern.bootsessionuuid, which the
// kernel generates afresh at every boot and keeps for its life (the
// counterpart of Linux's /proc/sys/kernel/random/boot_id), lower-cased, and
// kern.boottime, when it started. kern.boottime is derived from the wall
// clock minus the time since boot, so it moves when the clock is stepped:
// compare against it with a few seconds of slack, as against Linux's btime.
func BootSession() (id string, start time.Time, err error) {
	u, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return "", time.Time{}, err
	}
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return "", time.Time{}, err
	}
	return parseBoot(u, int64(tv.Sec), int64(tv.Usec))
}

// BootSessionID is BootSession's id alone, for readers that need no boot
// time (liveness's boot_id), so that a failing kern.boottime does not cost
// them the id, and both read one form of it.
func BootSessionID() (string, error) {
	u, err := unix.Sysctl("kern.bootsessionuuid")
	if err != nil {
		return "", err
	}
	return parseBootID(u)
}
