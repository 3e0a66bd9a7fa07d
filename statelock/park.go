package statelock

import (
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/exactfs/exactfs"
)

// A released record's descriptor is parked rather than closed, so that the
// next lock or claim of the same record in this process takes it without
// opening the name again (an open and a close of an *os.File are five
// system calls; a whole lock cycle is about sixty), and, for F.lock, so
// that a release that this process follows with its next Lock wakes nobody.
//
// Closing F.lock's written descriptor is what wakes the first waiter
// (IN_CLOSE_WRITE, internal/wake watch.go), so how long a released F.lock
// stays parked is waiting policy: wake.Policy.Linger decides it, with the
// knobs of the locker's config (parkRecord). What stays here is the proof
// side: a descriptor is reused only for the inode its name names now.
//
// A parked descriptor holds no lock; it keeps its inode alive, so the pair
// (device, inode) that lstat shows for the name is that very inode, and it
// is taken only after such an lstat (takeParked). Its filesystem stays busy
// for an unmount for at most the policy's ParkIdle after the last release.
// Each parked descriptor outlives the call that parked it and takes its
// time from that call's policy (the idle given to park), never from a
// later caller's.
var parked struct {
	sync.Mutex
	m map[[2]uint64][]*parkedFile
	n int
}

type parkedFile struct {
	key   [2]uint64
	f     *os.File
	timer *time.Timer
}

const parkMax = 64

// park keeps f, open on the inode key, for idle; then it is closed.
//
// On Windows nothing is parked: f is closed at once. There an open handle
// keeps a deleted file's name (a legacy delete leaves it delete-pending
// until the last handle closes), so a parked handle on a record that a
// peer then reclaims would keep F.lock's name taken from every creator
// (exactfs or TypeScript) for up to idle, and a person could not remove
// the directory meanwhile.
func park(key [2]uint64, f *os.File, idle time.Duration) {
	parked.Lock()
	if parked.n >= parkMax || idle <= 0 || runtime.GOOS == "windows" {
		parked.Unlock()
		f.Close()
		return
	}
	if parked.m == nil {
		parked.m = map[[2]uint64][]*parkedFile{}
	}
	p := &parkedFile{key: key, f: f}
	parked.m[key] = append(parked.m[key], p)
	parked.n++
	p.timer = time.AfterFunc(idle, p.expire)
	parked.Unlock()
}

// unpark removes p from the pool; false when it was taken already.
func (p *parkedFile) unpark() bool {
	list := parked.m[p.key]
	for i, q := range list {
		if q == p {
			list[i] = list[len(list)-1]
			list[len(list)-1] = nil
			if list = list[:len(list)-1]; len(list) == 0 {
				delete(parked.m, p.key)
			} else {
				parked.m[p.key] = list
			}
			parked.n--
			return true
		}
	}
	return false
}

func (p *parkedFile) expire() {
	parked.Lock()
	ok := p.unpark()
	parked.Unlock()
	if ok {
		p.f.Close()
	}
}

// takeParked returns a parked descriptor on the inode name names now, or
// nil. The caller owns it: it proves what the inode holds before writing,
// and closes or parks it again.
func (l *locker) takeParked(name string) *os.File {
	fi, err := l.dir.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	id, ok := fi.Sys().(exactfs.Identity)
	if !ok {
		return nil
	}
	return l.takeParkedAt([2]uint64{id.Dev, id.Ino})
}

// takeParkedAt returns a parked descriptor on the inode key (device, inode
// number), or nil: takeParked, for a caller that has just seen which inode
// the name names.
func (l *locker) takeParkedAt(key [2]uint64) *os.File {
	if key == ([2]uint64{}) {
		return nil
	}
	parked.Lock()
	defer parked.Unlock()
	list := parked.m[key]
	if len(list) == 0 {
		return nil
	}
	p := list[len(list)-1]
	p.unpark()
	p.timer.Stop()
	return p.f
}

// parkRecord parks the descriptor of a record we have just released (its
// OFD lock dropped), for as long as the queue on it allows
// (wake.Policy.Linger). away says this process is not about to lock again
// (Update's early release, when its directory fsyncs take longer than the
// policy's HandoffDelay: lastDirSync), so a queued waiter is woken at once
// instead of after HandoffDelay: parking would only delay the hand-off.
func (l *locker) parkRecord(f *os.File, id exactfs.Identity, away bool) {
	park([2]uint64{id.Dev, id.Ino}, f, l.cfg.policy.Linger(int(f.Fd()), away))
}
