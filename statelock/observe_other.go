//go:build !linux || exactfs_portable

package statelock

import "github.com/exactfs/exactfs/statelock/internal/wake"

// observation is empty here: without inotify no event wakes a waiter
// early (every wait is a timed sleep), so there is nothing to tell apart.
type observation struct{}

func (l *locker) observe(*wake.Ticket) observation { return observation{} }

// same is always false: every wake is a deadline, after which the waiter
// attempts.
func (o observation) same(observation) bool { return false }
