package exactfs

import (
	"errors"
	"fmt"
	"os"

	"github.com/exactfs/exactfs/internal/sys"
)

// The kernel probe (exactfs doctor): how a lock waiter sleeps here, and
// whether the kernel can say that a file is open, which together with the
// OFD probe of Probe decide how a crashed holder is judged and what
// recover may remove. It answers by trying what statelock and the store do,
// not by reading their internals: a waiter makes its own waker (inotify on
// Linux, kqueue on macOS) for every wait, and falls back to a timed
// backoff when the kernel refuses one, so doctor makes one too and closes
// it; the residue sweep, the abandoned-write rule and recover ask the lease
// probe (ProbeUnopened, ProbeNoWriter), so doctor asks it on a file it
// creates under the directory, in both states, and checks both answers.

// KernelReport is what ProbeKernel found.
type KernelReport struct {
	// Waker names how a lock waiter sleeps here: "inotify", "kqueue", or
	// "timed backoff" when there is no waker (then Wake.Supported is false).
	Waker string
	// Wake: whether a change in the directory woke the waker at once.
	Wake ProbeResult
	// OpenFiles: whether the kernel answers the no-writer and unopened
	// probes on this filesystem (Linux's F_SETLEASE): both "open" while a
	// second descriptor exists and "not open" once it is closed.
	OpenFiles ProbeResult
	// Portable is true in a binary built with the exactfs_portable tag,
	// which runs the fallbacks of systems without inotify, OFD locks and
	// the lease probe even on Linux (a test build).
	Portable bool
}

// ProbeKernel probes, in a private subdirectory of d that it removes
// afterwards, how a lock waiter is woken here and whether the kernel can
// tell that a file on d's filesystem is open. It fails only when it cannot
// make its subdirectory; each probe's own failure is in the report.
func (d *Dir) ProbeKernel() (r *KernelReport, err error) {
	err = d.use("probe", func(dfd int) error {
		r, err = probeKernelIn(dfd, d.path)
		return err
	})
	return r, err
}

func probeKernelIn(dfd int, dir string) (*KernelReport, error) {
	r := &KernelReport{Portable: sys.Portable}
	err := inProbeDir(dfd, dir, func(tfd int, created map[string]bool) error {
		r.Waker, r.Wake = probeWaker(tfd, func(n string) error {
			fd, err := sys.Open(tfd, n, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			created[n] = true
			return sys.Close(fd)
		})
		r.OpenFiles = probeOpenFiles(tfd, created)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// probeOpenFiles asks the lease probes about a file held open for writing
// by a second descriptor, then about it once that descriptor is closed:
// the kernel must say "open" and then "not open", through both probes.
func probeOpenFiles(tfd int, created map[string]bool) ProbeResult {
	const n = "opened"
	w, err := sys.Open(tfd, n, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return ProbeResult{false, "could not create the probe file: " + errnoText(err)}
	}
	created[n] = true
	rd, err := sys.Open(tfd, n, os.O_RDONLY, 0)
	if err != nil {
		sys.Close(w)
		return ProbeResult{false, "could not open the probe file again: " + errnoText(err)}
	}
	defer sys.Close(rd)
	nw, un := sys.ProbeNoWriter(rd), sys.ProbeUnopened(rd)
	sys.Close(w)
	if why := unanswered(nw, un); why != "" {
		return ProbeResult{false, why}
	}
	if nw != sys.ErrWouldBlock || un != sys.ErrWouldBlock {
		return ProbeResult{false, fmt.Sprintf("a file open for writing through another descriptor was reported not open (no-writer probe: %v, unopened probe: %v): the kernel's answer cannot be trusted here", answerText(nw), answerText(un))}
	}
	nw, un = sys.ProbeNoWriter(rd), sys.ProbeUnopened(rd)
	if why := unanswered(nw, un); why != "" {
		return ProbeResult{false, why}
	}
	if nw != nil || un != nil {
		return ProbeResult{false, fmt.Sprintf("a file nobody else had open was reported open (no-writer probe: %v, unopened probe: %v)", answerText(nw), answerText(un))}
	}
	return ProbeResult{true, "F_SETLEASE: a second descriptor open for writing is seen, and its close is seen"}
}

// unanswered says why the kernel gave no answer, or "" when both probes
// answered (nil or ErrWouldBlock).
func unanswered(errs ...error) string {
	for _, err := range errs {
		switch {
		case err == nil, err == sys.ErrWouldBlock:
		case errors.Is(err, sys.ErrUnsupported):
			return "the kernel cannot tell whether a file is open on this system (no lease probe)"
		default:
			return "F_SETLEASE refused: " + errnoText(err) + ": the kernel cannot tell whether a file is open here"
		}
	}
	return ""
}

func answerText(err error) string {
	switch err {
	case nil:
		return "not open"
	case sys.ErrWouldBlock:
		return "open"
	}
	return err.Error()
}
