//go:build !unix

package main

import "github.com/exactfs/exactfs"

// noteRootOwned: there is no root whose files would lock a user out.
func noteRootOwned(e *env, cmd, path string) {}

// refuseForeignOwner: no uids to tell apart; the write reports what it
// cannot do.
func refuseForeignOwner(d *exactfs.Dir, name, op, path string) error { return nil }
