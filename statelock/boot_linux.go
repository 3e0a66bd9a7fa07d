package statelock

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// bootTime is when the current boot started, from btime in /proc/stat
// (whole seconds). Read once: it does not change within a boot.
var bootTime = sync.OnceValues(func() (time.Time, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, err
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, os.ErrNotExist
})

// bootSlack absorbs btime's one-second resolution and its drift (it is
// derived from the wall clock minus uptime).
const bootSlack = 3 * time.Second

// writtenBeforeBoot reports whether an mtime lies before the current boot;
// ok is false when the boot time is unknown.
func writtenBeforeBoot(mtimeNs int64) (before, ok bool) {
	bt, err := bootTime()
	if err != nil {
		return false, false
	}
	return writtenBefore(mtimeNs, bt, bootSlack), true
}
