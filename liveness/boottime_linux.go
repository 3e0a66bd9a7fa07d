package liveness

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// bootSlack absorbs btime's one-second resolution and its drift (it is
// derived from the wall clock minus uptime).
const bootSlack = 3 * time.Second

// bootTime is btime in /proc/stat (whole seconds), read once.
var bootTime = sync.OnceValues(func() (time.Time, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}, fmt.Errorf("liveness: boot time: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("liveness: boot time: btime in /proc/stat: %w", err)
			}
			return time.Unix(s, 0), nil
		}
	}
	if err := sc.Err(); err != nil {
		return time.Time{}, fmt.Errorf("liveness: boot time: reading /proc/stat: %w", err)
	}
	return time.Time{}, fmt.Errorf("liveness: boot time: /proc/stat has no btime line: %w", os.ErrNotExist)
})
