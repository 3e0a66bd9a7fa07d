package liveness

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/exactfs/exactfs"
)

// The owner-only checks of the config root and the secret on Windows.
//
// On Unix they read mode bits. On Windows permissions are the DACL, and
// what proves a directory owner-only is its security descriptor: the owner
// SID is the current user's, and the DACL is protected (nothing inherited)
// and grants access to that SID alone (issue 22 step 5, shared with the
// store's owner-only rule). That check does not exist yet, and the mode
// bits Go synthesizes on Windows say nothing about who may write, so both
// checks refuse: an installation secret others could replace would let
// them make this host's records look foreign (never reclaimed) or another
// installation's look local. Failing here keeps LoadHostIdentity failing
// closed on Windows even once the file primitives below it work.

func checkConfigRootMode(dir string, _ fs.FileMode) error {
	return fmt.Errorf("liveness: config root %s: cannot prove that only its owner may write it: "+
		"the owner-only check of a directory's DACL is not written yet on Windows; "+
		"a library caller can pass a fixed host identity instead (liveness.FixedHostIdentity): %w", dir, exactfs.ErrUnsupported)
}

func tightenSecretMode(*os.File, fs.FileInfo) error {
	return fmt.Errorf("cannot prove that only its owner may read it: "+
		"the owner-only check of a file's DACL is not written yet on Windows: %w", exactfs.ErrUnsupported)
}
