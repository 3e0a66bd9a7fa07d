package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/liveness"
)

// Defaults of the reference (SPEC §5.3).
const (
	DefaultLeaseDuration     = 60 * time.Second
	DefaultHeartbeatInterval = 10 * time.Second
	DefaultWaitBudget        = 5 * time.Second
	DefaultPollInterval      = 50 * time.Millisecond
)

// EmptyRecordAge is how old a zero-byte lock file must be before an
// acquirer removes it (by exact unlink). A zero-byte lock file is a
// placeholder that an exact unlink left at the name (it crashed, or raced
// another exact unlink of the same record: Go acquirers serialize their
// reclaims with flock, TypeScript peers do not), or the record of a
// TypeScript peer that died between creating and writing it; the same age
// rule as for the placeholders of SPEC §2.7 applies.
const EmptyRecordAge = 15 * time.Minute

// LeaseOption configures AcquireLease.
type LeaseOption func(*leaseConfig)

type leaseConfig struct {
	lease, heartbeat, wait, poll time.Duration
	createDir                    bool
	emptyAge                     time.Duration
	probe                        liveness.Prober // nil: the running system
	noAttestation                bool            // tests: write records without the kernel lock
}

func defaultLeaseConfig() leaseConfig {
	return leaseConfig{
		lease: DefaultLeaseDuration, heartbeat: DefaultHeartbeatInterval,
		wait: DefaultWaitBudget, poll: DefaultPollInterval, emptyAge: EmptyRecordAge,
	}
}

// LeaseDuration sets how long a record stays valid without a heartbeat
// (default 60 s).
func LeaseDuration(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.lease = d } }

// HeartbeatInterval sets how often the holder renews its record (default
// 10 s). Zero or less disables the heartbeat goroutine; AssertOwned still
// renews a lease within one interval (or a sixth of the lease) of expiry.
func HeartbeatInterval(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.heartbeat = d } }

// WaitBudget sets how long AcquireLease waits for a held lease (default
// 5 s). Zero makes one attempt.
func WaitBudget(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.wait = d } }

// PollInterval sets the pause between attempts while waiting (default
// 50 ms).
func PollInterval(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.poll = d } }

// CreateLocksDir makes AcquireLease create the locks directory (mode 0700,
// owner-only) when it does not exist. An existing directory is verified,
// never repaired.
func CreateLocksDir() LeaseOption { return func(c *leaseConfig) { c.createDir = true } }

// renewWithin is how close to expiry AssertOwned renews the lease.
func (c *leaseConfig) renewWithin() time.Duration {
	if c.heartbeat > 0 && c.heartbeat < c.lease {
		return c.heartbeat
	}
	return c.lease / 6
}

// Lease is a held lease lock. Its methods are safe for concurrent use. A
// Lease must be released: its heartbeat goroutine runs, and its record
// stays live, until Release.
type Lease struct {
	dir     *exactfs.Dir
	ownsDir bool
	path    string
	name    string // the lock file's name in dir
	cfg     leaseConfig

	mu       sync.Mutex
	f        *os.File         // the descriptor we created; every write goes through it
	inode    exactfs.Identity // dev and ino of f
	rec      LeaseRecord      // what we last wrote
	written  []byte           // its bytes; nil when a write failed half way
	released bool
	lost     error // set by the heartbeat when it found the lease gone

	stop     chan struct{}
	done     chan struct{}
	relOnce  sync.Once
	relError error
}

var processStartID = sync.OnceValue(exactfs.NewUUID)

var bootID = sync.OnceValue(func() string {
	id, _ := liveness.BootID()
	return id
})

func nowMs() int64 { return time.Now().UnixMilli() }

// validLeaseName accepts the names the reference accepts.
func validLeaseName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > 200 {
		return newErr("acquire", name, exactfs.CodeInvalidRequest, "invalid lease name", nil)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return newErr("acquire", name, exactfs.CodeInvalidRequest, "a lease name may use only letters, digits, '_', '.' and '-'", nil)
		}
	}
	return nil
}

// AcquireLease takes the lease name in locksDir: the file
// <locksDir>/<name>.lock, created exclusively, owner-only, holding a
// LeaseRecord. While another holder has it, AcquireLease waits (polling, up
// to the wait budget, or until ctx is done). A held record is taken over
// only when it is released, or when its lease has expired AND its owner is
// provably gone (another boot, or no such process); expiry alone never
// steals from a live process. A record an exactfs holder wrote in this
// boot also carries the kernel's attestation (an OFD lock it holds on the
// record while it holds the lease, Linux): a holder that died, SIGKILL
// included, is proved gone by the lock's absence and its lease is taken
// over at once, without waiting for the expiry. The takeover is an exact
// unlink of the very bytes that were judged (liveness.Reclaim).
//
// The returned Lease renews itself from a heartbeat goroutine until
// Release. Its Fence is strictly greater than the fence of every earlier
// holder of the same name in the same directory; see Lease.Fence.
func AcquireLease(ctx context.Context, locksDir, name string, opts ...LeaseOption) (*Lease, error) {
	cfg := defaultLeaseConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := validLeaseName(name); err != nil {
		return nil, err
	}
	d, err := exactfs.OpenDir(locksDir)
	created := false
	if err != nil && cfg.createDir && errors.Is(err, exactfs.ErrNotFound) {
		if merr := exactfs.Mkdir(locksDir, 0o700); merr != nil && !errors.Is(merr, exactfs.ErrDestinationExists) {
			return nil, merr
		} else if merr == nil {
			created = true
		}
		d, err = exactfs.OpenDir(locksDir)
	}
	if err != nil {
		return nil, err
	}
	df, err := d.File()
	if err == nil {
		if created {
			err = ApplyOwnerOnly(df)
		} else {
			err = VerifyOwnerOnly(df)
		}
		df.Close()
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	l, err := acquireIn(ctx, d, name, cfg)
	if err != nil {
		d.Close()
		return nil, err
	}
	l.ownsDir = true
	return l, nil
}

// acquireIn runs the acquire loop in an open, verified locks directory.
func acquireIn(ctx context.Context, d *exactfs.Dir, name string, cfg leaseConfig) (*Lease, error) {
	lockName := name + ".lock"
	path := filepath.Join(d.Name(), lockName)
	start := time.Now()
	deadline := start.Add(cfg.wait)
	var seenFence uint64
	var holder string
	attempts, immediate := 0, 0
	judge := liveness.Judge{HostLocal: true, Probe: cfg.probe}
	for {
		attempts++
		if err := ctx.Err(); err != nil {
			return nil, &Error{Op: "acquire", Path: path, Code: exactfs.CodeInterrupted, Err: err,
				Detail: fmt.Sprintf("gave up after %d attempts in %v; %s", attempts, time.Since(start).Round(time.Millisecond), holder)}
		}
		retryNow := false
		residue := false
		j, err := liveness.Reclaim(d, lockName, retireName, func(c liveness.Captured) liveness.Judgement {
			rec, perr := ParseLeaseRecord(c.Data)
			if perr != nil {
				if c.ID.Size == 0 && c.ID.Nlink == 1 && time.Since(time.Unix(0, c.ID.MtimeNs)) >= cfg.emptyAge {
					residue = true
					holder = "an old, empty lock file (crash residue) was found"
					return liveness.Judgement{Verdict: liveness.Dead, Reason: holder}
				}
				holder = "the lock file holds a malformed record, which is never reclaimed automatically: " + perr.Error()
				return liveness.Judgement{Verdict: liveness.Unknown, Reason: holder}
			}
			seenFence = max(seenFence, rec.Fence)
			v := judgeLease(&judge, rec, c.File, time.Now())
			holder = describeHolder(rec, v.Reason)
			return v
		})
		switch {
		case j.Verdict == liveness.Dead:
			// Judged dead: err is the removal's. A removal that failed
			// (a successor took the name, another reclaimer is at it) is
			// looked at again after the pause.
			if err == nil {
				retryNow = true
			} else if errors.Is(err, exactfs.ErrAtomicUnavailable) && !residue {
				return nil, &Error{Op: "acquire", Path: path, Code: exactfs.CodeAtomicUnavailable, Err: err,
					Detail: "the stale record cannot be removed exactly on this filesystem; it needs explicit recovery"}
			}
		case err == nil:
			// Kept: a live or unprovable holder.
		case errors.Is(err, exactfs.ErrNotFound):
			l, cerr := create(d, lockName, path, seenFence, cfg)
			if cerr == nil {
				return l, nil
			}
			if !errors.Is(cerr, exactfs.ErrDestinationExists) {
				return nil, cerr
			}
			retryNow = true
		case errors.Is(err, exactfs.ErrChangedDuringRead):
			holder = "the record was being rewritten"
		default:
			// A symlink, FIFO, directory or anything else at the lock
			// name is not a lock anyone wrote: refuse at once.
			return nil, &Error{Op: "acquire", Path: path, Code: exactfs.CodeOf(err), Err: err,
				Detail: "unsafe lock path; refusing to use or remove it"}
		}
		// Progress (a reclaim, or a create lost to a racer) is followed
		// by an immediate look, even past the deadline, a few times over.
		if retryNow && immediate < 4 {
			immediate++
			continue
		}
		immediate = 0
		now := time.Now()
		if !now.Before(deadline) {
			return nil, &Error{Op: "acquire", Path: path, Code: CodeLeaseBusy,
				Detail: fmt.Sprintf("not acquired after %d attempts in %v: %s", attempts, now.Sub(start).Round(time.Millisecond), holder)}
		}
		t := time.NewTimer(min(cfg.poll, deadline.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// judgeLease applies the rules of SPEC §5.3 to a held record, and the
// kernel attestation of §4.7 to one that claims it. f is the descriptor
// the record's bytes were read through.
//
// A record released, or one whose lease expired and whose owner is
// provably gone (another boot, no such process), is Dead; expiry alone
// never steals from a live process. A record an exactfs holder wrote in
// this boot with its kernel lock (KernelLock) is judged by the kernel at
// once, expired or not: no lock on the inode means the holder's descriptor
// is gone, so a SIGKILLed holder's lease is reclaimed without waiting for
// its expiry; a lock means it is there. Records without the attestation
// (TypeScript peers, earlier exactfs versions, filesystems without OFD
// locks) keep the expiry-and-pid rule.
func judgeLease(j *liveness.Judge, rec LeaseRecord, f *os.File, now time.Time) liveness.Judgement {
	if rec.Released {
		return liveness.Judgement{Verdict: liveness.Dead, Reason: "released"}
	}
	left := time.Duration(rec.LeaseExpiresAt-now.UnixMilli()) * time.Millisecond
	when := "lease expires in " + left.Round(time.Millisecond).String()
	if left <= 0 {
		when = "lease expired " + (-left).Round(time.Millisecond).String() + " ago"
	}
	if rec.KernelLock && rec.BootID != "" && rec.BootID == bootID() {
		if k, ok := liveness.Attested(f); ok {
			switch {
			case k.Verdict == liveness.Dead:
				k.Reason = when + " and the owner is gone: " + k.Reason
			case left <= 0:
				k.Reason = when + " but the owner is not provably gone: " + k.String()
			default:
				k.Reason = when + " (" + k.Reason + ")"
			}
			return k
		}
	}
	if left > 0 {
		return liveness.Judgement{Verdict: liveness.Alive, Reason: when}
	}
	v := j.Judge(liveness.Owner{Pid: rec.Pid, BootID: rec.BootID})
	if v.Verdict == liveness.Dead {
		return liveness.Judgement{Verdict: liveness.Dead, Reason: when + " and the owner is gone: " + v.Reason}
	}
	return liveness.Judgement{Verdict: v.Verdict, Reason: when + " but the owner is not provably gone: " + v.String()}
}

func describeHolder(rec LeaseRecord, why string) string {
	a := rec.AttemptID
	if len(a) > 8 {
		a = a[:8] + "…"
	}
	return fmt.Sprintf("held by pid %d (attempt %s); %s", rec.Pid, a, why)
}

// retireName is the quarantine name of an exact unlink of a lock record,
// the one the reference uses.
func retireName() string {
	return fmt.Sprintf(".gjc-lock-retire-%d-%s", os.Getpid(), exactfs.NewUUID())
}

// create makes the lock file exclusively and writes our record. It returns
// destination_exists when another process created it first.
func create(d *exactfs.Dir, lockName, path string, seenFence uint64, cfg leaseConfig) (*Lease, error) {
	f, err := d.OpenFile(lockName, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	l := &Lease{dir: d, path: path, name: strings.TrimSuffix(lockName, ".lock"), cfg: cfg, f: f}
	fail := func(err error) (*Lease, error) {
		l.retract()
		f.Close()
		return nil, &Error{Op: "acquire", Path: path, Code: CodeOf(err), Err: err, Detail: "the lock file was created but could not be initialized; it was retracted"}
	}
	if err := ApplyOwnerOnly(f); err != nil {
		return fail(err)
	}
	l.inode, err = fileInode(f)
	if err != nil {
		return fail(err)
	}
	// The attestation is taken before the first byte of the record that
	// claims it, and lasts as long as f: a contender in this boot that
	// finds no lock on the inode knows we are gone.
	kernelLock := !cfg.noAttestation && liveness.HoldAttestation(f)
	// A provisional token from what this attempt has seen; the fence
	// counter below settles it. The record is valid from the first write,
	// so a contender never waits on a half-made lock longer than needed.
	prov, _, err := readFence(d, l.fenceName())
	if err != nil {
		return fail(err)
	}
	now := nowMs()
	l.rec = LeaseRecord{
		AttemptID: exactfs.NewUUID(), Pid: os.Getpid(), BootID: bootID(), ProcessStartID: processStartID(),
		CreatedAt: now, HeartbeatAt: now, LeaseExpiresAt: now + cfg.lease.Milliseconds(),
		Fence: max(prov, seenFence) + 1, KernelLock: kernelLock,
	}
	if err := l.writeLocked(); err != nil {
		return fail(err)
	}
	// The record's name must survive a power cut before anyone relies on
	// the lease.
	if err := d.Sync(); err != nil {
		return fail(err)
	}
	hook.Fire(hook.LeaseCreated, path)
	fence, err := bumpFence(d, l.fenceName(), l.rec.Fence)
	if err != nil {
		return fail(err)
	}
	if fence != l.rec.Fence {
		l.rec.Fence = fence
		if err := l.writeLocked(); err != nil {
			return fail(err)
		}
	}
	if cfg.heartbeat > 0 {
		l.stop = make(chan struct{})
		l.done = make(chan struct{})
		go l.heartbeat()
	}
	return l, nil
}

// retract removes the lock file we created and failed to initialize, but
// only while our descriptor is open and the name still holds its inode;
// anything else at the name may already be a successor's.
func (l *Lease) retract() {
	mine, err := fileInode(l.f)
	if err != nil {
		return
	}
	_, named, err := l.dir.Capture(l.name + ".lock")
	if err != nil || !named.SameInode(mine) {
		return
	}
	l.dir.UnlinkExact(l.name+".lock", named, retireName())
}

func (l *Lease) fenceName() string { return l.name + ".fence" }

// Path returns the path of the lock file.
func (l *Lease) Path() string { return l.path }

// AttemptID returns the attempt id in our record.
func (l *Lease) AttemptID() string { return l.rec.AttemptID }

// Fence returns the fencing token of this acquisition. Tokens strictly
// increase across successive holders of one lease name in one directory, so
// a resource that remembers the highest token it has seen can refuse a
// write from a holder that has since been superseded.
//
// Why they increase: besides the token in the record, the locks directory
// keeps a counter file, <name>.fence, which only ever grows (it is replaced
// by compare-and-swap to max(current, ours)). A holder writes its token to
// the counter before AcquireLease returns it, while holding the lease. A new
// holder reads the counter only after it created the lock file, i.e. after
// every earlier holder's record was released or its owner proved dead, so
// after every token ever returned was written; it takes one more than the
// largest of the counter and every record it saw on the way. A holder that
// died between creating its record and writing the counter never returned
// its token to anyone, so a successor reusing that number harms nobody.
// Records are removed when they are reclaimed, which is why the counter,
// not the record, carries the sequence; deleting the counter file by hand
// restarts it (from the largest token still visible in a record).
//
// TypeScript peers write no tokens and do not read the counter: in a mixed
// deployment, tokens order the Go holders only.
func (l *Lease) Fence() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.Fence
}

// readFence returns the counter (0 when absent) and its identity.
func readFence(d *exactfs.Dir, name string) (uint64, *exactfs.Identity, error) {
	for range 8 {
		data, id, err := d.Capture(name)
		switch {
		case errors.Is(err, exactfs.ErrNotFound):
			return 0, nil, nil
		case errors.Is(err, exactfs.ErrChangedDuringRead):
			continue
		case err != nil:
			return 0, nil, err
		}
		v, err := parseFence(data)
		if err != nil {
			err.(*Error).Path = filepath.Join(d.Name(), name)
			return 0, nil, err
		}
		return v, &id, nil
	}
	return 0, nil, newErr("acquire", filepath.Join(d.Name(), name), exactfs.CodeChangedDuringRead, "the fence counter kept changing", nil)
}

// bumpFence raises the counter to at least want, by compare-and-swap, and
// returns the token to use: want, or one more than a larger counter.
func bumpFence(d *exactfs.Dir, name string, want uint64) (uint64, error) {
	for range 16 {
		cur, id, err := readFence(d, name)
		if err != nil {
			return 0, err
		}
		if cur >= want {
			want = cur + 1
		}
		if id == nil {
			_, err = d.Publish(name, formatFence(want), 0o600)
		} else {
			_, err = d.ReplaceExpected(name, formatFence(want), *id)
		}
		switch {
		case err == nil:
			return want, nil
		case errors.Is(err, exactfs.ErrDestinationExists), errors.Is(err, exactfs.ErrIdentityMismatch), errors.Is(err, exactfs.ErrChangedDuringRead):
			continue
		}
		return 0, err
	}
	return 0, newErr("acquire", filepath.Join(d.Name(), name), exactfs.CodeIdentityMismatch, "the fence counter kept changing under compare-and-swap", nil)
}

// writeLocked rewrites the record in place through the held descriptor:
// write from offset 0, truncate to the new length, fsync. Writing before
// truncating means a reader never sees an empty file, only (briefly) a
// record it cannot parse, which counts as held. l.mu must be held (or l
// not yet shared).
func (l *Lease) writeLocked() error {
	b := l.rec.Marshal()
	l.written = nil
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return newErr("write", l.path, exactfs.CodeIOError, "the lease record could not be written", err)
	}
	if err := l.f.Truncate(int64(len(b))); err != nil {
		return newErr("write", l.path, exactfs.CodeIOError, "the lease record could not be truncated", err)
	}
	// A renewal that is not on disk would let a crash forget the
	// heartbeat; a release that is not on disk would strand the lease.
	if err := l.f.Sync(); err != nil {
		return newErr("write", l.path, exactfs.CodeDurabilityFailed, "the lease record could not be flushed", err)
	}
	l.written = b
	return nil
}

// checkLocked proves the lease is still ours: the path names the inode we
// created, and holds exactly the bytes we last wrote (so our attemptId, not
// released).
func (l *Lease) checkLocked() error {
	if l.released {
		return l.lostErr("the lease was released", nil)
	}
	if l.lost != nil {
		return l.lost
	}
	data, id, err := l.dir.Capture(l.name + ".lock")
	if err != nil {
		return l.lostErr("the lock file cannot be read at its name", err)
	}
	if !id.SameInode(l.inode) {
		return l.lostErr(fmt.Sprintf("the lock path names another file (inode %d, ours %d)", id.Ino, l.inode.Ino), nil)
	}
	if l.written == nil || !bytes.Equal(data, l.written) {
		if rec, err := ParseLeaseRecord(data); err == nil && rec.AttemptID != l.rec.AttemptID {
			return l.lostErr("the record carries another attempt ("+rec.AttemptID+")", nil)
		}
		return l.lostErr("the record was rewritten by someone else", nil)
	}
	return nil
}

func (l *Lease) lostErr(detail string, cause error) error {
	return &Error{Op: "assert", Path: l.path, Code: CodeLeaseLost, Detail: "lease lost: " + detail, Err: cause}
}

// renewLocked extends the lease through the descriptor.
func (l *Lease) renewLocked() error {
	now := nowMs()
	l.rec.HeartbeatAt = now
	l.rec.LeaseExpiresAt = now + l.cfg.lease.Milliseconds()
	return l.writeLocked()
}

// AssertOwned is the fencing check: it returns nil only if the lock path
// still names the file this lease created and that file still holds our
// record, unreleased. Otherwise it returns an error matching ErrLeaseLost.
// A lease within one heartbeat of expiry (or past it: nobody may take an
// expired lease from a live holder) is renewed here, so a starved heartbeat
// goroutine does not fence a live holder; the ownership proof is repeated
// after the renewal.
func (l *Lease) AssertOwned() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.checkLocked(); err != nil {
		return err
	}
	if time.Duration(l.rec.LeaseExpiresAt-nowMs())*time.Millisecond > l.cfg.renewWithin() {
		return nil
	}
	if err := l.renewLocked(); err != nil {
		return l.lostErr("the renewal failed", err)
	}
	return l.checkLocked()
}

func (l *Lease) heartbeat() {
	defer close(l.done)
	t := time.NewTicker(l.cfg.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		hook.Fire(hook.LeaseHeartbeat, l.path)
		l.mu.Lock()
		err := l.checkLocked()
		if err == nil {
			if rerr := l.renewLocked(); rerr != nil {
				err = l.lostErr("the heartbeat could not renew the record", rerr)
			}
		}
		if err != nil && !l.released {
			// Keep the first reason; every later check reports it.
			l.lost = err
		}
		l.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// Release gives the lease up: it stops the heartbeat, proves the lease is
// still ours, and rewrites the record through the held descriptor with
// released:true and the lease ending now. It never unlinks the lock file
// by name, because a releaser whose lease was lost would otherwise remove a
// successor's record. When the proof fails, nothing is written, the
// descriptor is closed, and the error matches ErrLeaseLost. Release is
// idempotent: later calls return the first call's result.
func (l *Lease) Release() error {
	l.relOnce.Do(func() {
		if l.stop != nil {
			close(l.stop)
			<-l.done
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		err := l.checkLocked()
		if err == nil {
			now := nowMs()
			l.rec.Released = true
			l.rec.HeartbeatAt = now
			l.rec.LeaseExpiresAt = now
			err = l.writeLocked()
		}
		l.released = true
		if cerr := l.f.Close(); err == nil && cerr != nil {
			err = newErr("release", l.path, exactfs.CodeIOError, "closing the lock file failed", cerr)
		}
		if l.ownsDir {
			l.dir.Close()
		}
		l.relError = err
	})
	return l.relError
}
