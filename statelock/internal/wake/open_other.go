//go:build !linux || exactfs_portable

package wake

import "github.com/exactfs/exactfs"

// Open: the mailbox needs shared futexes and OFD locks (Linux); elsewhere
// waiters wait the reference way.
func Open(d *exactfs.Dir, lockName string, create bool) (*Mailbox, error) {
	name, _ := Name(lockName)
	return nil, &unusable{path: d.Name() + "/" + name, why: "this platform has no shared futexes"}
}
