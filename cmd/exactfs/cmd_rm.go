package main

import (
	"errors"
	"fmt"

	"github.com/exactfs/exactfs"
)

type rmOptions struct{ expect string }

func init() {
	register(&command{
		name:    "rm",
		summary: "remove a file only if it is exactly the one identified (compare-and-delete)",
		usage:   "rm --expect ID PATH",
		help: `Remove the regular file PATH only if it is exactly ID, as printed by
'exactfs stat': the same inode, size, modification time and SHA-256 of its
bytes, with a single link. Anything else at PATH, including a file that was
replaced after you looked at it, is kept and the command exits 76.

The file is first detached from its name (atomically exchanged with an empty
placeholder where the filesystem can, so no other writer can slip in), checked
again, and only then deleted; a successor that won the race is put back.
A hard-linked file is refused (exit 77): its other name would keep the bytes.
On a filesystem without atomic rename flags (some NFS and FUSE setups) the
command refuses (exit 74, atomic_unavailable) and removes nothing.

Examples:
  id=$(exactfs stat --id old.json)
  ... decide that old.json should go ...
  exactfs rm --expect "$id" old.json   # exit 76 if someone rewrote it meanwhile`,
		flags: func(fs *flagSet) any {
			o := &rmOptions{}
			fs.StringVar(&o.expect, "expect", "", "the `ID` of the file to remove, from 'exactfs stat' (required)")
			return o
		},
		run: runRm,
	})
}

func runRm(e *env, opts any, args []string) error {
	o := opts.(*rmOptions)
	if o.expect == "" {
		return usagef("--expect ID is required: exactfs removes only a file it can identify")
	}
	if len(args) != 1 {
		return usagef("want exactly one PATH, got %d arguments", len(args))
	}
	want, err := exactfs.ParseIdentity(o.expect)
	if err != nil {
		return usagef("--expect: %v", err)
	}
	err = withParent(args[0], func(d *exactfs.Dir, name string) error {
		// A private name TypeScript peers skip (exactfs.QuarantinePrefix),
		// so a crash between the detach and the delete leaves nothing they
		// would mistake for a state file.
		return d.UnlinkExact(name, want, exactfs.RmQuarantineName())
	})
	if errors.Is(err, exactfs.ErrCleanupPending) {
		// The file is gone from its name; what remains is named residue.
		fmt.Fprintf(e.stderr, "exactfs rm: removed %s, but residue remains: %v\n", args[0], err)
		return nil
	}
	return err
}
