package exactfs

import (
	"fmt"
	"os"
	"runtime"

	"github.com/exactfs/exactfs/internal/sys"
)

// Leak detection, as cmd/go's lockedfile does it: a runtime cleanup on every
// Dir notices one that became unreachable without Close.
//
// lockedfile panics there; its only user is the go command, where a missing
// Close is a bug in the same repository and the process is short-lived. A
// library cannot kill its user's long-running process for it, and a Dir's
// descriptor carries no lock: closing it repairs the whole leak. So the
// cleanup closes the descriptor and writes one line to standard error
// naming the directory, which is loud enough to be found in a test run or
// a log, and costs the program nothing else. The cleanup never sees the Dir
// itself (it would keep it reachable), only its descriptor number and path,
// and Close cancels it, so it can never close a number that Close already
// gave back to the kernel.

// leakReport receives the report of a value dropped without Close. Tests
// replace it to observe the report.
var leakReport = func(msg string) { fmt.Fprintln(os.Stderr, msg) }

// dirLeak is what Dir's cleanup needs to repair and report a dropped Dir.
type dirLeak struct {
	fd   int
	path string
}

func watchDir(d *Dir) {
	d.cleanup = runtime.AddCleanup(d, dirDropped, dirLeak{fd: d.fd, path: d.path})
}

func dirDropped(l dirLeak) {
	sys.Close(l.fd)
	leakReport(fmt.Sprintf("exactfs: a Dir for %s became unreachable without a call to Close; its descriptor was closed (a leak in the program using exactfs)", l.path))
}
