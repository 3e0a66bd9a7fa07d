package statelock

import (
	"math"
	"time"

	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock/internal/wake"
)

// DefaultWait is the wait budget of Lock, With and Update when neither
// WithWait nor a deadline on the context sets one.
const DefaultWait = 5 * time.Second

// WaitForever, given to WithWait, lets Lock wait as long as it takes: until
// the lock is taken or the context is done.
const WaitForever time.Duration = math.MaxInt64

// Option configures a lock call.
type Option func(*config)

type config struct {
	wait       time.Duration
	waitSet    bool // WithWait was given: its budget holds even under a longer ctx deadline
	configRoot string
	host       *liveness.HostIdentity
	hostLocal  bool
	// holdThroughSync: Update keeps the lock until the directory fsync is
	// done (WithEarlyRelease(false)).
	holdThroughSync bool
	// makeDir: a missing directory of the state file is made (WithMakeDir).
	makeDir bool
	// allowEmpty: Update may write an empty state file (WithAllowEmpty).
	allowEmpty bool
	// noGroup: Update takes the lock on its own (WithGroupCommit(false)).
	noGroup bool
	probe   liveness.Prober // tests only (withProber)
	// noSlots turns off SPEC §4.8.1's kernel slots for this call (tests
	// only: withoutKernelSlots). On, F.lock records of this process carry
	// "ofd_slot" and are attested by the shared lock on that one byte
	// (slot.go); off, a record is attested by the exclusive whole-range
	// lock, as before the cohort, and the call takes no part in it
	// (cohort). This is protocol, not waiting: it decides the bytes of
	// the record and what attests it, so it is the call's configuration,
	// beside the host rules, and not a knob of wake.Policy.
	noSlots bool
	// policy: the waiting policy (the queue of waiters not seated in the
	// mailbox, when a release wakes the first of them, the cohort's polls
	// and yields), with its knobs: defaultPolicy unless a test gave its
	// own copy (withPolicy). A pointer, so that a locker, made per call,
	// stays as small as before.
	policy *wake.Policy
}

func newConfig(opts []Option) config {
	c := config{wait: DefaultWait, policy: &defaultPolicy}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithWait sets how long Lock waits for a holder before failing with
// acquire_timeout; the context can still end the wait earlier. Zero or
// negative means one attempt, like TryLock; WaitForever means no limit but
// the context's. Without WithWait, a context with a deadline is the budget
// (however far away the deadline is), and a context without one waits
// DefaultWait.
func WithWait(d time.Duration) Option { return func(c *config) { c.wait, c.waitSet = d, true } }

// WithConfigRoot names the directory holding machine-identity.secret, from
// which the host id in owner records is derived. Processes that
// share a lock must use the same root, TypeScript peers included
// ($GJC_CONFIG_ROOT). Default: liveness.DefaultConfigRoot().
func WithConfigRoot(dir string) Option { return func(c *config) { c.configRoot = dir } }

// WithHostIdentity uses h as this host's identity instead of loading one
// from the config root.
func WithHostIdentity(h liveness.HostIdentity) Option {
	return func(c *config) { c.host = &h }
}

// WithHostLocal declares that the state file's directory is never shared
// with another machine, so an owner record without owner_host_id (written
// by an old peer) may be judged by its pid. Without it such records are
// treated as alive forever: on a shared volume they may come from anywhere.
func WithHostLocal(local bool) Option { return func(c *config) { c.hostLocal = local } }

// WithEarlyRelease says whether Update releases the lock as soon as the new
// state file is renamed into place, before it fsyncs the directory (on, the
// default), or only after that fsync (off: the lock is held through both
// fsyncs, as a hand-written flock + durable write does). Either way Update
// returns only once the new bytes, or what a later holder made of them,
// are durable; the package documentation ("Early release") argues why
// early release keeps that promise. Lock and With ignore it.
func WithEarlyRelease(on bool) Option { return func(c *config) { c.holdThroughSync = !on } }

// WithMakeDir says whether Lock, TryLock, With and Update make the state
// file's directory, and its missing parents, when it does not exist
// (owner-only, 0700, never through a symlink, as the TypeScript reference
// does). Off by default: a missing directory is refused with an error that
// satisfies errors.Is(err, ErrNoDirectory) and names the directory, so a
// mistyped path cannot give a lock and a state file that no other process
// looks at. (The CLI's --mkdir.)
func WithMakeDir(on bool) Option { return func(c *config) { c.makeDir = on } }

// WithAllowEmpty lets Update's function return no bytes (nil or empty) and
// so replace the state file with an empty one. Off by default: such a
// result is refused, the file left untouched, with an error that
// satisfies errors.Is(err, ErrEmptyResult). To leave the file as it is,
// the function returns ErrNoChange instead. (The CLI's --allow-empty.)
func WithAllowEmpty(on bool) Option { return func(c *config) { c.allowEmpty = on } }

// WithGroupCommit says whether concurrent Updates of one state file in this
// process may share one lock cycle (on, the default) or each take the lock
// on its own (off). Shared: the first caller takes the lock, reads the
// file once, and the functions of the callers waiting meanwhile run in
// arrival order, each on the output of the previous one that succeeded,
// each in its own caller's goroutine; one durable write carries them all,
// and each caller returns once that write is durable. See the package
// documentation ("Group commit") for what each caller is told. Peers see
// one ordinary lock cycle. Callers share a cycle only when their state
// file has the same absolute path and their options are the same (the
// wait budget and WithAllowEmpty aside); an Update that makes one attempt
// (WithWait of zero or less) never waits behind others of this process.
// Lock, TryLock and With ignore it.
func WithGroupCommit(on bool) Option { return func(c *config) { c.noGroup = !on } }

// withProber makes the liveness judge ask p instead of the system. Tests use
// it to make kill(pid, 0) answer EPERM or EIO, which cannot be arranged on
// disk.
func withProber(p liveness.Prober) Option { return func(c *config) { c.probe = p } }

// withoutKernelSlots makes a call write and attest its records as an
// exactfs from before the kernel slots (tests that stand in for one).
func withoutKernelSlots() Option { return func(c *config) { c.noSlots = true } }

// defaultPolicy is the waiting policy of every call: wake.NewPolicy's
// defaults. Written only by a test binary before its first call (TestMain,
// a worker process's start), never while calls run: withPolicy changes a
// copy.
var defaultPolicy = wake.NewPolicy(queueBase)

// withPolicy changes the waiting policy's knobs of one call (tests only).
func withPolicy(set func(*wake.Policy)) Option {
	return func(c *config) {
		p := *c.policy
		set(&p)
		c.policy = &p
	}
}
