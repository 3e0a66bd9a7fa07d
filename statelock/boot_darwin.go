package statelock

import (
	"sync"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
)

// bootTime is when the current boot started, from kern.boottime. Read once,
// as on Linux: a process judges every record against one boot time.
var bootTime = sync.OnceValues(func() (time.Time, error) {
	_, start, err := sys.BootSession()
	return start, err
})

// bootSlack absorbs the moves of kern.boottime. XNU keeps it as the wall
// clock minus the time since boot, so when the clock is stepped forward
// after a record was written (timed's first step after boot, a manual
// change), the boot seems to have started later than it did, and a record
// of this boot could read as older than the boot. A step of up to a minute
// is absorbed. The cost runs the safe way: a torn record written in the
// last minute before a power cut, by a Mac that boots again within that
// minute, is not reclaimed by this rule (exactfs recover removes it).
const bootSlack = time.Minute

// writtenBeforeBoot reports whether an mtime lies before the current boot;
// ok is false when the boot time is unknown.
func writtenBeforeBoot(mtimeNs int64) (before, ok bool) {
	bt, err := bootTime()
	if err != nil {
		return false, false
	}
	return writtenBefore(mtimeNs, bt, bootSlack), true
}
