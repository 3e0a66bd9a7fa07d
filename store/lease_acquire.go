package store

import (
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

// acquireIn runs the acquire loop in an open, verified locks directory:
// look at the lock name, take it if it is free, reclaim it if its holder
// is proved gone, else wait a poll and look again, until the wait budget
// or ctx ends.
func acquireIn(ctx context.Context, d *exactfs.Dir, name string, cfg leaseConfig) (*Lease, error) {
	a := &acquirer{d: d, cfg: cfg, lockName: name + exactfs.LeaseSuffix, start: time.Now(),
		judge: liveness.Judge{HostLocal: true, Probe: cfg.probe}}
	a.path = filepath.Join(d.Name(), a.lockName)
	deadline := a.start.Add(cfg.wait)
	for immediate := 0; ; {
		a.attempts++
		if err := ctx.Err(); err != nil {
			return nil, a.fail(exactfs.CodeInterrupted, err, "gave up")
		}
		l, progress, err := a.attempt()
		if l != nil || err != nil {
			return l, err
		}
		// Progress (a reclaim, or a create lost to a racer) is followed
		// by an immediate look, even past the deadline, a few times over.
		if progress && immediate < 4 {
			immediate++
			continue
		}
		immediate = 0
		now := time.Now()
		if !now.Before(deadline) {
			return nil, a.fail(CodeLeaseBusy, nil, "not acquired")
		}
		t := time.NewTimer(min(cfg.poll, deadline.Sub(now)))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// acquirer is the state of one AcquireLease across its attempts.
type acquirer struct {
	d              *exactfs.Dir
	cfg            leaseConfig
	lockName, path string
	judge          liveness.Judge
	start          time.Time
	attempts       int

	seenFence uint64 // the largest fence of a record seen on the way
	holder    string // who or what kept the lease at the last look, for people
	whole     string // holder as the last whole record described it
	residue   bool   // the last judged record was an empty crash residue
}

// midRewrite is holder for a look that found no whole record: the record
// changed while it was read, or its bytes did not parse. A holder's
// heartbeat rewrites its record in place (write, then truncate), so a look
// can land inside it; when an earlier look of this call read a whole
// record, that record still says who holds the lease, and the error that
// ends the wait names it rather than the rewrite it happened to see last.
func (a *acquirer) midRewrite(found string) string {
	if a.whole == "" {
		return found
	}
	return a.whole + " (the last look found the record mid-rewrite: " + found + ")"
}

// attempt looks once: it returns the lease when it created the lock file,
// progress when the name may be free at once (a reclaim removed the
// record, or a racer created it first), or a final error. Otherwise the
// lease is held and a.holder says by whom.
func (a *acquirer) attempt() (l *Lease, progress bool, err error) {
	j, err := liveness.Reclaim(a.d, a.lockName, liveness.Removal{Quarantine: exactfs.LeaseRetireName}, a.judgeCaptured)
	switch {
	case j.Verdict == liveness.Dead:
		// Judged dead: err is the removal's. A removal that failed (a
		// successor took the name, another reclaimer is at it) is looked
		// at again after the pause.
		if errors.Is(err, exactfs.ErrAtomicUnavailable) && !a.residue {
			return nil, false, &Error{Op: "acquire", Path: a.path, Code: exactfs.CodeAtomicUnavailable, Err: err,
				Detail: "the stale record cannot be removed exactly on this filesystem; it needs explicit recovery"}
		}
		return nil, err == nil, nil
	case err == nil:
		return nil, false, nil // kept: a live or unprovable holder
	case errors.Is(err, exactfs.ErrNotFound):
		l, err := create(a.d, a.lockName, a.path, a.seenFence, a.cfg)
		if errors.Is(err, exactfs.ErrDestinationExists) {
			return nil, true, nil
		}
		return l, false, err
	case errors.Is(err, exactfs.ErrChangedDuringRead):
		a.holder = a.midRewrite("the record was being rewritten")
		return nil, false, nil
	case errors.Is(err, exactfs.ErrRecordTooLarge):
		// Malformed at once, without reading it (exactfs.RecordCap): no
		// lease record is that large, and no rule removes what nobody read.
		return nil, false, &Error{Op: "acquire", Path: a.path, Code: exactfs.CodeRecordTooLarge, Err: err,
			Detail: "the lock file is larger than any lease record; it is kept: check it and remove it by hand"}
	}
	// A symlink, FIFO, directory or anything else at the lock name is not
	// a lock anyone wrote: refuse at once.
	return nil, false, &Error{Op: "acquire", Path: a.path, Code: exactfs.CodeOf(err), Err: err,
		Detail: "unsafe lock path; refusing to use or remove it"}
}

// judgeCaptured is the judge liveness.Reclaim asks about the captured lock
// file: an old, empty file is crash residue (Dead); any other record that
// does not parse is never reclaimed automatically; a record is judged by
// judgeLease.
func (a *acquirer) judgeCaptured(c liveness.Captured) liveness.Judgement {
	a.residue = false
	rec, err := ParseLeaseRecord(c.Data)
	if err != nil {
		if c.ID.Size == 0 && c.ID.Nlink == 1 && time.Since(time.Unix(0, c.ID.MtimeNs)) >= a.cfg.emptyAge {
			a.residue = true
			a.holder = "an old, empty lock file (crash residue) was found"
			return liveness.Judgement{Verdict: liveness.Dead, Reason: a.holder}
		}
		a.holder = a.midRewrite("the lock file holds a malformed record, which is never reclaimed automatically: " + err.Error())
		return liveness.Judgement{Verdict: liveness.Unknown, Reason: a.holder}
	}
	a.seenFence = max(a.seenFence, rec.Fence)
	v := judgeLease(&a.judge, rec, c.File, time.Now())
	a.holder = describeHolder(rec, v.Reason)
	a.whole = a.holder
	return v
}

// fail is the error that ends the wait: what was tried, for how long, and
// who kept the lease.
func (a *acquirer) fail(c exactfs.Code, cause error, what string) error {
	sep := ": "
	if c == exactfs.CodeInterrupted {
		sep = "; "
	}
	return &Error{Op: "acquire", Path: a.path, Code: c, Err: cause,
		Detail: fmt.Sprintf("%s after %d attempts in %v%s%s", what, a.attempts, time.Since(a.start).Round(time.Millisecond), sep, a.holder)}
}

// judgeLease applies the lease rules below to a held record, and the
// kernel attestation (liveness.HoldAttestation) to one that claims it. f
// is the descriptor the record's bytes were read through.
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
	if rec.KernelLock && kernelRuleBoot(rec.BootID) && sameInodeAs(f, rec) {
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

// sameInodeAs reports whether f is open on the inode the record's
// writer named as the one it holds its attestation on (records without
// the names predate them: the kernel rule is not applied to them).
func sameInodeAs(f *os.File, rec LeaseRecord) bool {
	if rec.Dev == 0 && rec.Ino == 0 {
		return false
	}
	id, err := fileInode(f)
	return err == nil && id.Dev == rec.Dev && id.Ino == rec.Ino
}

// attestationSeen is the judge's question (liveness.Attested) asked
// through another open of a lock file, for exactfs.LockVisible: a record
// may claim its attestation only where a contender, judging through its
// own open, would see it held.
func attestationSeen(g *os.File) (held, known bool) {
	k, ok := liveness.Attested(g)
	return ok && k.Verdict == liveness.Alive, ok
}

func describeHolder(rec LeaseRecord, why string) string {
	a := rec.AttemptID
	if len(a) > 8 {
		a = a[:8] + "…"
	}
	return fmt.Sprintf("held by pid %d (attempt %s); %s", rec.Pid, a, why)
}

// create makes the lock file exclusively and writes our record. It returns
// destination_exists when another process created it first.
func create(d *exactfs.Dir, lockName, path string, seenFence uint64, cfg leaseConfig) (*Lease, error) {
	f, err := d.OpenFile(lockName, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	l := &lease{dir: d, path: path, name: strings.TrimSuffix(lockName, exactfs.LeaseSuffix), cfg: cfg, f: f}
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
	kernelLock := !cfg.noAttestation && liveness.HoldAttestation(f) && exactfs.LockVisible(f, attestationSeen)
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
	if kernelLock {
		l.rec.Dev, l.rec.Ino = l.inode.Dev, l.inode.Ino
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
	return watchLease(l), nil
}

// retract removes the lock file we created and failed to initialize, but
// only while our descriptor is open and the name still holds its inode;
// anything else at the name may already be a successor's.
func (l *lease) retract() {
	mine, err := fileInode(l.f)
	if err != nil {
		return
	}
	_, named, err := l.dir.CaptureRecord(l.name + exactfs.LeaseSuffix)
	if err != nil || !named.SameInode(mine) {
		return
	}
	l.dir.UnlinkExact(l.name+exactfs.LeaseSuffix, named, exactfs.LeaseRetireName())
}
