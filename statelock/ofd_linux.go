//go:build !exactfs_portable

package statelock

import (
	"errors"
	"os"
	"sync"
	"time"

	"github.com/exactfs/exactfs"
)

// ofdSupported reports whether this platform has open-file-description
// locks, the kernel attestation of ownership (see the package
// documentation, Beyond the reference).
const ofdSupported = true

// kernelAttest: the OFD lock is the attestation (judge.go, kernelVerdict).
const kernelAttest = ofdSupported

// kernelRule reports whether a record's holder may be judged by its OFD
// lock: it carries our evidence fields and this boot's id (the same
// kernel, whose lock table is the one asked).
func kernelRule(r *Record, selfBoot string) bool {
	return r.Kernel() && r.BootID != "" && r.BootID == selfBoot
}

// errOFDConflict means another open file description holds a lock on the
// inode: a live exactfs holder. errOFDUnsupported means the filesystem
// takes no such locks (some FUSE and network filesystems).
var (
	errOFDConflict    = errors.New("another descriptor holds a kernel lock on the record")
	errOFDUnsupported = errors.New("the filesystem does not support OFD locks")
)

// ofdLock takes an exclusive OFD lock on the whole file f, which must be
// open for writing. The lock belongs to the open file description, not to
// the process or thread: it lasts exactly as long as f is open, and the
// kernel drops it when the holder dies, however it dies. That is what lets
// a contender prove a holder gone without trusting pids.
func ofdLock(f *os.File) error {
	return lockAnswer(exactfs.TryLockRange(f, exactfs.LockExclusive, 0, queueBase))
}

// ofdUnlock drops the lock ofdLock took on f, just before f is closed.
// Closing alone drops it too, but later than the inotify event of the
// close: the kernel sends IN_CLOSE_WRITE (fsnotify_close) before it removes
// the file's locks (locks_remove_file) in __fput, so a waiter woken by the
// close could still find our lock, read it as a live holder, and sleep a
// whole backoff step (up to 100 ms) with no further event to wake it.
// Unlocking first means the event only ever reports a lock that is gone.
// It changes nothing else: the caller closes f at once, and the close
// would drop the lock a moment later anyway.
func ofdUnlock(f *os.File) {
	exactfs.UnlockRange(f, 0, queueBase)
}

// ofdHeld asks the kernel whether any open file description holds a lock
// on the inode f is open on. f may be read-only: F_OFD_GETLK checks for a
// conflict without taking anything. known is false when the filesystem does
// not answer (then nothing can be concluded).
func ofdHeld(f *os.File) (held, known bool) { return exactfs.RangeHeld(f, 0, queueBase) }

// probeFd is a read-only raw descriptor on a record's inode, opened only to
// ask the kernel about locks on it (look, peek, the queue): an
// exactfs.LockFD (Dir.OpenLockFD, the proofs of Dir.OpenFile without an
// *os.File, whose setup costs two more system calls). fd is -1 when name
// is not a regular file we could open.
type probeFd struct {
	fd  int
	ino uint64
}

func (l *locker) openProbe(name string) probeFd {
	fd, ino, _ := l.dir.OpenLockFD(name)
	return probeFd{fd: int(fd), ino: ino}
}

func (p probeFd) close() { exactfs.LockFD(p.fd).Close() }

// looks keeps one read-only descriptor per F.lock inode a new caller of
// this process has looked at (look), shared by concurrent callers and
// closed after the policy's LookIdle unused, so that a caller's look
// neither opens nor closes one: closing a read-only descriptor of F.lock
// is the event that wakes the waiters queued behind the first
// (internal/wake watch.go), and a busy lock sees a new caller on every
// update. A descriptor keeps its inode
// alive, so an inode number that lstat shows under the same device is that
// very inode. At most lookMax are kept; beyond that a look opens and
// closes its own. An idle descriptor holds its filesystem busy (umount)
// for at most LookIdle: that of the call that gave it back last (which
// arms its timer; an entry outlives the calls that use it).
var looks struct {
	sync.Mutex
	m map[[2]uint64]*lookEntry
}

type lookEntry struct {
	key   [2]uint64
	fd    exactfs.LockFD
	refs  int
	used  time.Time
	idle  time.Duration // the LookIdle of the call that gave it back last
	timer *time.Timer
}

const lookMax = 64

// lookProbe returns a read-only descriptor on the regular file name names
// now, and done, which the caller calls when it no longer uses it (and
// never closes it itself). fd is -1 when name is not a regular file.
func (l *locker) lookProbe(name string) (fd exactfs.LockFD, done func()) {
	fd, _, done = l.lookProbeAt(name)
	return fd, done
}

// lookProbeAt is lookProbe, with the inode (device, inode number) name
// named when it looked.
func (l *locker) lookProbeAt(name string) (fd exactfs.LockFD, key [2]uint64, done func()) {
	st, err := l.dir.LstatRaw(name)
	if err != nil || !st.Mode.IsRegular() {
		return -1, key, nil
	}
	key = [2]uint64{st.Dev, st.Ino}
	looks.Lock()
	e := looks.m[key]
	if e == nil {
		full := len(looks.m) >= lookMax
		looks.Unlock()
		p := l.openProbe(name)
		if p.fd < 0 || p.ino != st.Ino {
			p.close()
			return -1, key, nil
		}
		if full {
			return exactfs.LockFD(p.fd), key, p.close
		}
		looks.Lock()
		if e = looks.m[key]; e != nil {
			p.close()
		} else {
			if looks.m == nil {
				looks.m = map[[2]uint64]*lookEntry{}
			}
			e = &lookEntry{key: key, fd: exactfs.LockFD(p.fd)}
			looks.m[key] = e
		}
	}
	e.refs++
	looks.Unlock()
	idle := l.cfg.policy.LookIdle
	return e.fd, key, func() { e.release(idle) }
}

func (e *lookEntry) release(idle time.Duration) {
	looks.Lock()
	defer looks.Unlock()
	e.refs--
	e.used, e.idle = time.Now(), idle
	if e.refs == 0 && e.timer == nil {
		e.timer = time.AfterFunc(idle, e.expire)
	}
}

func (e *lookEntry) expire() {
	looks.Lock()
	defer looks.Unlock()
	e.timer = nil
	if e.refs > 0 {
		return
	}
	if d := e.idle - time.Since(e.used); d > 0 {
		e.timer = time.AfterFunc(d, e.expire)
		return
	}
	delete(looks.m, e.key)
	e.fd.Close()
}

// probeLocks runs ask with a probe of name, and closes it. false: name is
// not a regular file we could open.
func (l *locker) probeLocks(name string, ask func(fd exactfs.LockFD)) bool {
	p := l.openProbe(name)
	if p.fd < 0 {
		return false
	}
	defer p.close()
	ask(exactfs.LockFD(p.fd))
	return true
}
