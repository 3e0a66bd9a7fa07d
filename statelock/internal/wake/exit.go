package wake

import (
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// WatchExit calls wake once the process pid exits, where that process is
// the one whose pidfd inode is ino (a Go cohort record's pidfd_ino), and
// returns the function that ends the watch (after it returns, wake is
// not running and will not be called); ok says a watch was set up. A
// seated waiter uses it to be woken when the holder it waits behind
// dies: the holder's death makes
// no other event, and its poll may have grown to BackoffMax while F.lock
// stayed as it was. Like the watch of F.lock it is a hint: the waiter
// decides nothing on it (it looks, and judges the holder by its slot
// lock), so a wake for nothing costs one look, and a watch that could not
// be set up (no pidfd here, another pid namespace, a pid already reused)
// leaves the poll as it was. The poller waits on the pidfd: no thread is
// held, and nothing runs until the process exits.
func WatchExit(pid int64, ino uint64, wake func()) (stop func(), ok bool) {
	if pid <= 0 || ino == 0 || int64(int(pid)) != pid {
		return func() {}, false
	}
	fd, got, err := sys.ExitFd(int(pid))
	if err != nil {
		return func() {}, false
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	if got != ino {
		f.Close()
		return func() {}, false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return func() {}, false
	}
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		asked := false
		// The first call only asks the poller to wait: a pidfd is
		// readable once its process has exited, and there is nothing to
		// read. A Read ended by the Close below returns an error.
		err := rc.Read(func(uintptr) bool {
			done := asked
			asked = true
			return done
		})
		if err == nil {
			wake()
		}
	}()
	// stop returns only once the goroutine has: wake touches the caller's
	// seat, which the caller unmaps after it.
	return func() {
		f.Close()
		<-ended
	}, true
}
