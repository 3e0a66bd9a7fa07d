package liveness

import "time"

// BootTime reports when the current boot of this machine started, read
// once per process (it does not change within a boot), and slack: how far
// that answer may be off, in either direction, from the instant a
// filesystem timestamp of the same boot can carry. Callers that ask
// "was this written before the current boot?" (statelock's power-loss
// rule) must count only a time more than slack before start as before the
// boot.
//
// Linux: btime of /proc/stat, whole seconds derived from the wall clock
// minus the uptime, so slack covers its resolution and drift. macOS:
// kern.boottime, which XNU keeps as the wall clock minus the time since
// boot, so it moves when the clock is stepped forward after boot; slack
// absorbs a step of up to a minute (a torn record written within the last
// minute before a power cut, by a Mac that boots again within that minute,
// then does not count as before the boot: the safe way). Elsewhere err
// wraps errors.ErrUnsupported.
func BootTime() (start time.Time, slack time.Duration, err error) {
	start, err = bootTime()
	return start, bootSlack, err
}
