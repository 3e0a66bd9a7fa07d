package exactfs

import (
	"os"
	"sync"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
)

// lockVisibleOn caches LockVisible's answer per volume (device number,
// the volume serial on Windows): whether a lock is seen from another open
// is a property of the filesystem's lock semantics, not of a file or a
// range, so one proof per volume and process is enough.
var lockVisibleOn sync.Map // dev (uint64) -> bool

// LockVisible reports whether a kernel lock the caller holds through f is
// seen from another, independent open of the same file: it opens the file
// once more, read-only (through /proc/self/fd on Linux, by the empty name
// relative to f's handle on Windows; never a duplicate of f, whose locks
// it would share), and asks held through that second open the question a
// judge of the record would ask. Only when that question answers "held",
// known, is the lock visible.
//
// Why: a record that claims a kernel lock (a lease's or a state lock's
// "kernel_lock") is judged by contenders through their own opens, where a
// free range means "holder gone". On a volume that keeps byte-range locks
// per open, or per client, or an SMB handle that reconnected without its
// locks, every live holder would read as gone and be reclaimed. A writer
// that gets false must not claim the lock in its record (the judges then
// use the pid rules); the lock it took may stay, it proves nothing.
//
// The answer is proved once per volume and process and cached, true or
// false, including "held could not answer" (a filesystem that takes but
// cannot report locks). A failure to open the file once more is not
// cached: it answers false for this call only. It is false where the
// platform cannot open a file once more without sharing its locks (macOS,
// the portable build). held must not keep g.
func LockVisible(f *os.File, held func(g *os.File) (held, known bool)) bool {
	hidden := hook.IsSet(hook.LockVisibleHidden)
	var st RawStat
	if err := sys.Control(f, func(fd int) (err error) { st, err = sys.Fstat(fd); return err }); err != nil {
		return false
	}
	if !hidden {
		if v, ok := lockVisibleOn.Load(st.Dev); ok {
			return v.(bool)
		}
	}
	var n int
	if err := sys.Control(f, func(fd int) (err error) { n, err = sys.Reopen(fd); return err }); err != nil {
		return false
	}
	g := os.NewFile(uintptr(n), f.Name())
	defer g.Close()
	hook.Fire(hook.LockVisibleAsked, f.Name())
	h, known := held(g)
	if hidden {
		return false
	}
	v := h && known
	lockVisibleOn.Store(st.Dev, v)
	return v
}
