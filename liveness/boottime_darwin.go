package liveness

import (
	"fmt"
	"sync"
	"time"

	"github.com/exactfs/exactfs/internal/sys"
)

// bootSlack absorbs the moves of kern.boottime when the clock is stepped
// (BootTime).
const bootSlack = time.Minute

// bootTime is kern.boottime, read once.
var bootTime = sync.OnceValues(func() (time.Time, error) {
	_, start, err := sys.BootSession()
	if err != nil {
		return time.Time{}, fmt.Errorf("liveness: boot time: kern.boottime: %w", err)
	}
	return start, nil
})
