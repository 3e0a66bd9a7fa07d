package main

import (
	"strings"
	"testing"

	"github.com/exactfs/exactfs"
)

// TestDoctorKernelMeanings: what doctor says for the answers this machine
// cannot produce: a Linux filesystem that refuses leases but takes OFD
// locks (recover still removes claims on the kernel's lock answer, but
// residue is kept, and the user is told about fs.leases-enable), one that
// takes neither, macOS's kqueue waker and its failure, and a system with
// no waker at all (nothing to fix there).
func TestDoctorKernelMeanings(t *testing.T) {
	yes, no := exactfs.ProbeResult{Supported: true}, exactfs.ProbeResult{}
	say := func(ofd bool, k exactfs.KernelReport, goos string) string {
		r := &exactfs.ProbeReport{OFDLock: no}
		if ofd {
			r.OFDLock = yes
		}
		return strings.Join(kernelMeanings(r, &k, goos), "\n")
	}
	check := func(what, got string, want []string, not ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: does not say %q:\n%s", what, w, got)
			}
		}
		for _, w := range not {
			if strings.Contains(got, w) {
				t.Errorf("%s: says %q:\n%s", what, w, got)
			}
		}
	}
	inotify := exactfs.KernelReport{Waker: "inotify", Wake: yes}
	noLease := inotify
	noLease.OpenFiles = no
	check("linux, OFD but no lease probe", say(true, noLease, "linux"),
		[]string{"judged dead at once by the kernel", "staging files are kept", "fs.leases-enable", "no mailbox"},
		"keep-claim", "exactfs_portable")
	check("linux, neither", say(false, noLease, "linux"),
		[]string{"pid, start time and boot id only", "keep-claim, keep-lock", "local filesystem that takes OFD locks"})
	lease := inotify
	lease.OpenFiles = yes
	check("linux, lease but no OFD", say(false, lease, "linux"),
		[]string{"proven abandoned", "only when no process has it open for writing"}, "staging files are kept")
	check("inotify without events", say(true, exactfs.KernelReport{Waker: "inotify", Wake: no, OpenFiles: yes}, "linux"),
		[]string{"inotify works, but saw no change", "at most 100 ms late; nothing to change"}, "max_user_instances")
	check("darwin", say(false, exactfs.KernelReport{Waker: "kqueue", Wake: yes}, "darwin"),
		[]string{"kqueue EVFILT_VNODE wakes it at once", "darwin has no OFD locks: nothing to change", "darwin has no such probe",
			"judged by pid, zombie state and boot id (records here carry no start time)"}, "start time and boot id only")
	check("darwin without kqueue", say(false, exactfs.KernelReport{Waker: "timed backoff", Wake: exactfs.ProbeResult{Detail: "kqueue failed: EMFILE"}}, "darwin"),
		[]string{"kqueue is unavailable (kqueue failed: EMFILE)", "ulimit -n"}, "max_user_instances")
	check("freebsd", say(false, exactfs.KernelReport{Waker: "timed backoff"}, "freebsd"),
		[]string{"no waker on freebsd", "timed backoff (5 ms doubling to 100 ms", "judged by pid only"}, "start time")
}
