package store

import (
	"time"

	"github.com/exactfs/exactfs/liveness"
)

// Defaults of the reference's lease lock.
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
// rule as for exact unlink placeholders (15 minutes) applies.
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
