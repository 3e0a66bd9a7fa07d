package statelock

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
)

// Names derived from the state file F (see the package documentation, On
// disk).
const (
	lockSuffix    = ".lock"
	claimSuffix   = ".lock.transition"
	sidecarSuffix = ".lock.transition.owner"
)

// locker is one call's view of a state file's lock: the directory it lives
// in (held open, so every step works on the same directory even if its path
// is renamed), the names, and who we are.
type locker struct {
	cfg      config
	dir      *exactfs.Dir
	base     string // F's name in dir
	lockName string
	claim    string
	sidecar  string
	spare    string       // the spare claim directory's name, "" for none
	held     *exactfs.Dir // the claim directory while we hold it (nil: none, or claims are not recycled here)
	// mailboxSeen: this call's last hand-off look found the lock's
	// mailbox (handoff), so a sticky watcher that has none mapped is
	// told to look for it (keep, linger.go).
	mailboxSeen bool
	// The readers' rule through the mailbox (readsync.go): promised is
	// the promise this call's early release made in its grant, granted
	// the one the grant this call received carried.
	promised granterPromise
	granted  syncPromise
	// replayDue: the claim was made with mkdir, or its sidecar was not a
	// tombstone: the previous claim may have been crashed and reclaimed,
	// and its reclaimer killed after detaching it (replayDetached).
	replayDue bool
	// sweepDue: this acquisition reclaimed F.lock from a dead holder, which
	// may have left staging files of F, or created F.lock, so no holder
	// has swept this directory yet (residue.go).
	sweepDue bool
	lockPath string // for messages
	host     liveness.HostIdentity
	self     liveness.Evidence
	judge    liveness.Judge
	// euid is this process's effective uid, read once per call (the trust
	// rule asks it of every object it adopts, several per cycle).
	euid int
	// extra counts the users of this locker besides its caller (a record
	// kept for this process, sticky.go): close closes the directory when
	// the last one is done.
	extra atomic.Int32
}

// hostCache maps a config root to its host identity.
var hostCache struct {
	sync.RWMutex
	m map[string]liveness.HostIdentity
	// def is the identity under the default config root and the
	// environment it was derived from (defaultRootEnv).
	def atomic.Pointer[defaultHost]
}

type defaultHost struct {
	env  [3]string
	host liveness.HostIdentity
}

// defaultRootEnv is what liveness.DefaultConfigRoot derives the default
// root from: $XDG_CONFIG_HOME, else os.UserConfigDir ($XDG_CONFIG_HOME or
// $HOME on Unix and macOS, %AppData% on Windows). While these are as they
// were, the root is the same, and so is its identity: no path is built
// again (two allocations per lock call).
func defaultRootEnv() [3]string {
	return [3]string{os.Getenv("XDG_CONFIG_HOME"), os.Getenv("HOME"), os.Getenv("AppData")}
}

// hostIdentity loads the host identity for the config root once per
// process: the secret never changes once created, and re-deriving it on
// every lock call would add a file read to each cycle.
func hostIdentity(c *config) (liveness.HostIdentity, error) {
	if c.host != nil {
		return *c.host, nil
	}
	root := c.configRoot
	var env [3]string
	if root == "" {
		env = defaultRootEnv()
		if d := hostCache.def.Load(); d != nil && d.env == env {
			return d.host, nil
		}
		r, err := liveness.DefaultConfigRoot()
		if err != nil {
			return liveness.HostIdentity{}, err
		}
		root = r
	}
	hostCache.RLock()
	h, ok := hostCache.m[root]
	hostCache.RUnlock()
	if !ok {
		var err error
		if h, err = liveness.LoadHostIdentity(root); err != nil {
			return liveness.HostIdentity{}, err
		}
		if h.ID == "" {
			return liveness.HostIdentity{}, errors.New("host identity is empty")
		}
		hostCache.Lock()
		if hostCache.m == nil {
			hostCache.m = map[string]liveness.HostIdentity{}
		}
		hostCache.m[root] = h
		hostCache.Unlock()
	}
	if c.configRoot == "" {
		hostCache.def.Store(&defaultHost{env: env, host: h})
	}
	return h, nil
}

// newLocker prepares a lock call. Everything that can fail before a single
// lock file is touched fails here (a failure to establish the host id
// among them: it fails the call before anything is created).
func newLocker(stateFile string, opts []Option) (*locker, error) {
	return openLocker(stateFile, opts, true)
}

// openLocker is newLocker; create says whether a missing directory may be
// made (Lock does when WithMakeDir says so, as the reference always does;
// Inspect and Recover only look).
func openLocker(stateFile string, opts []Option, create bool) (*locker, error) {
	return openLockerWith(stateFile, newConfig(opts), create)
}

// openLockerWith is openLocker with the options applied already.
func openLockerWith(stateFile string, c config, create bool) (*locker, error) {
	lockPath := stateFile + lockSuffix
	fail := func(err error) (*locker, error) {
		return nil, lockError(lockPath, ReasonInitFailed, 0, 0, "", err)
	}
	dirPath, base := filepath.Split(stateFile)
	if base == "" || base == "." || base == ".." {
		return fail(&exactfs.Error{Op: "lock", Path: stateFile, Code: exactfs.CodeInvalidRequest, Detail: "the state file path names no file"})
	}
	if dirPath == "" {
		dirPath = "."
	}
	host, err := hostIdentity(&c)
	if err != nil {
		return fail(err)
	}
	self, err := liveness.Self()
	if err != nil {
		return fail(err)
	}
	// The reference creates the state file's directory; so do we, owner-only,
	// and following no symlink (exactfs.MkdirAll makes each missing
	// directory beneath the descriptor of its parent, so a symlink planted
	// after the open below found the directory missing is refused, never
	// made through). The directory nearly always exists: open it first, and
	// make it only when the open says it is missing (one lstat fewer per
	// call than looking first). Run as root in another user's tree, each
	// directory made is given to the owner of the directory it is made in
	// (exactfs.MkdirAllForParentOwner: the rule chownForDir applies to the
	// lock's own objects), or the user would be locked out of it.
	d, err := exactfs.OpenDir(dirPath)
	if create && errors.Is(err, os.ErrNotExist) {
		if !c.makeDir {
			return fail(noDirectory(dirPath, stateFile, err))
		}
		hook.Fire(hook.LockDirMissing, dirPath)
		if err := exactfs.MkdirAllForParentOwner(dirPath, 0o700); err != nil {
			return fail(err)
		}
		d, err = exactfs.OpenDir(dirPath)
	}
	if err != nil {
		return fail(err)
	}
	// The names are prefixes of one string: F.lock.transition.owner
	// begins with F.lock.transition, which begins with F.lock.
	sidecar := base + sidecarSuffix
	claim := sidecar[:len(base)+len(claimSuffix)]
	l := &locker{
		cfg:      c,
		dir:      d,
		base:     base,
		lockName: sidecar[:len(base)+len(lockSuffix)],
		claim:    claim,
		sidecar:  sidecar,
		spare:    exactfs.SpareName(claim),
		lockPath: lockPath,
		host:     host,
		self:     self,
		judge:    liveness.Judge{Host: host, HostLocal: c.hostLocal, Probe: c.probe},
		euid:     os.Geteuid(),
	}
	return l, nil
}

func (l *locker) close() {
	if l.extra.Add(-1) >= 0 {
		return
	}
	l.closeClaim()
	l.dir.Close()
}

// newOwner is the record this process writes when it takes a lock or a
// claim: the reference's fields (start_time in the linux-proc-v1 form on
// Linux, or TypeScript peers would read a live owner as a different
// incarnation and steal), our host id always (or TypeScript peers could
// never reclaim it), and the evidence only exactfs reads.
func (l *locker) newOwner() *Record {
	r := &Record{
		Pid:             int64(l.self.Pid),
		StartTime:       l.self.StartTime,
		StartTimeFormat: l.self.StartTimeFormat,
		Token:           exactfs.NewUUID(),
		HostID:          l.host.ID,
	}
	if r.StartTime == "" {
		r.StartTime = liveness.UnknownStartTime
	}
	if ofdSupported {
		// Only where we also hold an OFD lock on the record: the fields
		// tell a contender that the kernel can vouch for this holder.
		r.PidfdIno, r.PidNS, r.BootID = l.self.PidfdIno, l.self.PidNS, l.self.BootID
	} else {
		// The boot id alone claims no kernel lock (Record.Kernel): it is
		// evidence for the pid rules, under which a record from an
		// earlier boot is dead (liveness.Judge), OFD locks or not. On
		// macOS it is kern.bootsessionuuid; where the platform has none
		// (Windows) it stays empty.
		r.BootID = l.self.BootID
		// On Windows the holder takes the LockFileEx attestation
		// (ofd_windows.go), and the record says so.
		r.KernelLock = kernelAttest
	}
	return r
}

// lockOwner is newOwner for F.lock itself. A holder outside the host's
// initial pid namespace records its pid as its own namespace numbers it,
// which names another process, or none, in a reader's namespace outside;
// the TypeScript reference looks it up there and would call a live holder
// dead (a reused pid) and reclaim. So such a holder moves its host id from
// owner_host_id to pidns_host_id: the reference reads a record without
// owner_host_id as alive whatever its pid (fail closed), and exactfs readers
// judge it by its kernel lock as before. Only F.lock: the reference never
// judges a claim's sidecar (it never breaks a claim directory, and it fails
// on any sidecar that is not a tombstone), and our stale-claim rule needs
// the host id there. Tombstones keep owner_host_id.
//
// Its record carries this process's kernel slot (slot.go, slotOf)
// where the kernel gives one, unless the call turned slots off
// (config.noSlots).
func (l *locker) lockOwner() *Record {
	r := l.newOwner()
	if ofdSupported && !l.cfg.noSlots {
		r.OfdSlot = slotOf(l.self.PidfdIno)
	}
	if !l.self.InitialPidNS() {
		r.PidNSHostID, r.HostID = r.HostID, ""
	}
	return r
}

func (l *locker) tombstone() *Record { return tombstone(exactfs.NewUUID(), l.host.ID) }

// path joins a name in the lock directory for messages.
func (l *locker) path(name string) string { return filepath.Join(l.dir.Name(), name) }

// age is how long ago a record was last written, from the mtime of the very
// inode its bytes were read from.
func age(id exactfs.Identity) time.Duration {
	return time.Since(time.Unix(0, id.MtimeNs))
}
