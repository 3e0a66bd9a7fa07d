package exactfs

import "github.com/exactfs/exactfs/internal/sys"

// WindowsFacts is what ProbeWindows found about a directory's volume:
// its file system and flags, whether an owner-only DACL is kept, whether
// LockFileEx refuses a second handle, the machine GUID.
type WindowsFacts = sys.WindowsFacts

// ProbeWindows reports the Windows facts exactfs doctor prints for dir,
// probing in a private directory it removes. It is the one Windows call
// that works while the gate is shut (WindowsReady false): it reads by path
// and writes nothing of the caller's.
func ProbeWindows(dir string) (WindowsFacts, error) { return sys.ProbeWindows(dir) }

// WindowsReady reports whether this process may use exactfs's Windows
// primitives: in a program, only when it was started with the opt-in
// EXACTFS_WINDOWS=unverified (see README.md, "Windows"); without it every
// operation refuses.
func WindowsReady() bool { return sys.GateOpen() }
