package main

import (
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

type doctorOptions struct{ configRoot string }

func init() {
	register(&command{
		name:    "doctor",
		summary: "probe what the filesystem under DIR supports, and what that means for exactfs",
		usage:   "doctor [--config-root DIR] [DIR]",
		help: `Probe, for real, what the filesystem holding DIR (default: the current
directory) supports, in a private temporary subdirectory that is removed
afterwards:

  rename without replace   renameat2(RENAME_NOREPLACE) / renameatx_np(RENAME_EXCL)
  atomic exchange          renameat2(RENAME_EXCHANGE) / RENAME_SWAP
  hard links               link(2), the publish fallback
  POSIX ACLs               set, read back, clear (Linux)
  OFD locks                F_OFD_SETLK seen by a second description (Linux)
  open-file probe          F_SETLEASE sees a writer and its close (Linux)
  waiter wake-up           inotify (Linux) / kqueue EVFILT_VNODE (macOS)
                           woken by a file created here, or a timed backoff
  filesystem type          from statfs

and say what each answer means for exactfs: how a crashed lock holder is
judged (by the kernel, or by pid rules only), whether crash residue can be
removed or must be kept because the kernel cannot tell whether a file is
open, how a lock waiter sleeps, and what to do where one is degraded. On
Windows it reports the
volume's file system (NTFS or ReFS, or FAT/exFAT, which keep no ACLs), and
probes whether an owner-only DACL is kept and whether LockFileEx refuses a
second handle, and whether Windows support is enabled yet. Then print this host's identity,
the id that owner records carry so that a lock's holder can be recognized as
local (derived from the machine id and the installation secret under the
config root, as the TypeScript peers derive it).

Examples:
  exactfs doctor /var/lib/myapp
  exactfs doctor --config-root /etc/myapp/exactfs .`,
		flags: func(fs *flagSet) any {
			o := &doctorOptions{}
			fs.StringVar(&o.configRoot, "config-root", "", "`DIR` holding machine-identity.secret (default: $XDG_CONFIG_HOME/exactfs)")
			return o
		},
		run: runDoctor,
	})
}

func runDoctor(e *env, opts any, args []string) error {
	o := opts.(*doctorOptions)
	if len(args) > 1 {
		return usagef("want at most one DIR, got %d arguments", len(args))
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	if platformDoctor != nil {
		return platformDoctor(e, o, dir)
	}
	// Prove DIR is a directory reached without a symlink before probing in it.
	d, err := exactfs.OpenDir(dir)
	if err != nil {
		return err
	}
	r, err := d.Probe()
	if err != nil {
		d.Close()
		return err
	}
	k, err := d.ProbeKernel()
	d.Close()
	if err != nil {
		return err
	}
	w := e.stdout
	fmt.Fprintf(w, "exactfs doctor: %s (%s/%s)\n\n", dir, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "  filesystem          %s%s\n", r.FSType, map[bool]string{true: " (network/shared)", false: ""}[r.Network])
	line := func(name string, res exactfs.ProbeResult) {
		mark := "no "
		if res.Supported {
			mark = "yes"
		}
		fmt.Fprintf(w, "  %-19s %s  %s\n", name, mark, res.Detail)
	}
	line("rename no-replace", r.RenameNoReplace)
	line("atomic exchange", r.Exchange)
	line("hard links", r.HardLink)
	line("POSIX ACLs", r.ACL)
	line("OFD locks", r.OFDLock)
	line("open-file probe", k.OpenFiles)
	line("waiter wake-up", exactfs.ProbeResult{Supported: k.Wake.Supported, Detail: k.Waker + ": " + k.Wake.Detail})
	fmt.Fprintln(w, "\nWhat this means:")
	for _, m := range append(meanings(r), kernelMeanings(r, k, runtime.GOOS)...) {
		fmt.Fprintf(w, "  - %s\n", wrap(m, 74, "    "))
	}
	fmt.Fprintln(w)
	writeHostIdentity(w, o.configRoot)
	return nil
}

// platformDoctor, when a platform sets it (Windows: doctor_windows.go),
// replaces the probes below, which are Unix's.
var platformDoctor func(e *env, o *doctorOptions, dir string) error

// meanings turns probe results into consequences for a user of exactfs.
func meanings(r *exactfs.ProbeReport) []string {
	var m []string
	name := r.FSType
	switch {
	case r.RenameNoReplace.Supported && r.Exchange.Supported:
		m = append(m, "exact unlink, compare-and-swap (write --expect, ReplaceExpected) and publish all work with their strongest algorithm: a successor can never be lost in a race.")
	case r.RenameNoReplace.Supported:
		m = append(m, "no atomic exchange: exact unlink detaches with a no-replace rename (the name is briefly free; a successor that takes it is kept), and compare-and-swap replace (write --expect) refuses with atomic_unavailable.")
	default:
		m = append(m, fmt.Sprintf("%s: exact unlink unavailable (neither no-replace rename nor exchange): UnlinkExact, rm --expect and write --expect refuse with atomic_unavailable and remove nothing; stale locks are never reclaimed automatically here and need `exactfs recover`.", displayFS(name)))
		if r.HardLink.Supported {
			m = append(m, "publish (write --no-replace) uses the link(2) fallback: it still never replaces.")
		} else {
			m = append(m, "publish (write --no-replace) cannot be made safe here and refuses.")
		}
	}
	if r.Network {
		m = append(m, name+" is shared between hosts: rename is atomic only as seen by one client, and a lock held from another host is never judged dead by pid; such a lock stays until its owner releases it (or an operator runs `exactfs recover`). Give every host the same --config-root only if they really are one host.")
	}
	switch name {
	case "tmpfs", "ramfs":
		m = append(m, name+": nothing here survives a reboot; fsync costs nothing, and a lock record from before a reboot cannot exist.")
	case "overlay":
		m = append(m, "overlay: these answers are for the upper layer; a file from a lower layer is copied up (new inode) the first time it is written.")
	case "fuse":
		m = append(m, "FUSE: behaviour depends on the daemon (bindfs, for example, rejects rename flags); trust the probes above, not the name. The open-file probe and the waker see only what is done through this mount on this host, not changes the daemon's backing store gets another way.")
	}
	m = append(m, aclMeaning(r.ACL.Supported, runtime.GOOS))
	return m
}

// kernelMeanings says how a crashed holder is judged, what recover may
// remove, and how a waiter sleeps, from the OFD probe, the lease probe
// (ProbeKernel's OpenFiles) and the waker, each with what to do when it is
// degraded. What it claims is what statelock and recover do with those
// answers: a record is judged by the kernel only where OFD locks work
// (statelock's kernelVerdict); where they do not, recover replaces "no
// kernel lock on it" by the lease probe's "open for writing by no
// process", and keeps what neither can prove (statelock.Recover); staging
// residue is removed only when the lease probe proves it unopened (the
// residue sweep, the store's reaper).
// pidEvidence is what a record is judged by where no kernel lock attests
// it: Linux records carry the holder's start time; darwin's carry none
// ("unknown": there is no /proc, and a start time from ps reads
// differently in TypeScript's older builds), so a zombie is seen as dead
// and a reused pid is not.
func pidEvidence(goos string) string {
	switch goos {
	case "linux":
		return "pid, start time and boot id"
	case "darwin":
		return "pid, zombie state and boot id (records here carry no start time)"
	}
	return "pid"
}

func kernelMeanings(r *exactfs.ProbeReport, k *exactfs.KernelReport, goos string) []string {
	var m []string
	ofd, lease := r.OFDLock.Supported, k.OpenFiles.Supported
	if ofd {
		m = append(m, "crashed holders: a dead exactfs holder on this host is judged dead at once by the kernel (its OFD lock went with its last descriptor: kernel-attested ownership), with no pid-reuse ambiguity; TypeScript holders are judged by pid, start time and boot id. `exactfs recover` removes a crashed claim or malformed record only when the kernel reports no lock on it.")
	} else {
		s := "crashed holders: no OFD locks, so every holder is judged by " + pidEvidence(goos) + " only (still safe: unprovable means alive; a dead holder whose pid was reused looks alive until that process ends, and then `exactfs recover` or its own release frees the lock)."
		switch {
		case k.Portable:
		case goos == "linux":
			s += " Kernel attestation needs a local filesystem that takes OFD locks (ext4, xfs, btrfs, tmpfs): keep the state there if you can."
		default:
			s += " " + goos + " has no OFD locks: nothing to change."
		}
		m = append(m, s)
	}
	if lease {
		s := "crash residue: the kernel can tell whether a file is open here, so a crashed writer's staging files (F.tmp-…, .F.….staging) are proven abandoned and removed by the next holder's sweep or `exactfs recover`."
		if !ofd {
			s += " With no OFD locks, `exactfs recover` removes a crashed claim or malformed record only when no process has it open for writing."
		}
		m = append(m, s)
	} else {
		s := "crash residue: the kernel cannot tell whether a file is open here, so a crashed writer's staging files are kept, never removed on a guess: `exactfs status` and `exactfs recover` list them as kept (\"the kernel cannot tell whether it is open\"); remove one by hand only when you know no writer of it can still be running."
		if !ofd {
			s += " With no OFD locks either, `exactfs recover` also keeps crashed claims and malformed records (keep-claim, keep-lock) and prints the command that removes each by hand."
		}
		s += " Go waiters are not handed the lock directly (no mailbox); they take it the reference way."
		switch {
		case k.Portable:
		case goos == "linux":
			s += " On Linux this means the filesystem refuses file leases (network filesystems) or leases are switched off: `sysctl fs.leases-enable` must be 1; or keep the state on a local filesystem."
		default:
			s += " " + goos + " has no such probe: nothing to change."
		}
		m = append(m, s)
	}
	switch {
	case k.Wake.Supported:
		m = append(m, fmt.Sprintf("waiting: a lock waiter sleeps until the lock's record changes (%s wakes it at once when the holder lets go); every sleep is still capped at 100 ms, so a missed event costs at most that.", waker(k.Waker)))
	case k.Waker != "timed backoff":
		m = append(m, fmt.Sprintf("waiting: %s works, but saw no change made in this directory (a filesystem whose changes it does not see, such as a network or FUSE one): waiters here are woken by their timed backoff (5 ms doubling to 100 ms), at most 100 ms late; nothing to change.", waker(k.Waker)))
	case k.Portable:
		m = append(m, "waiting: no waker in this build: a lock waiter sleeps on a timed backoff (5 ms doubling to 100 ms between attempts) and notices a release at most 100 ms late.")
	case goos == "linux":
		m = append(m, "waiting: inotify is unavailable ("+k.Wake.Detail+"), so a lock waiter sleeps on a timed backoff (5 ms doubling to 100 ms between attempts) instead of being woken by the release: the lock still works, but a hand-off can be 100 ms late and every waiter wakes up to 10 times a second. EMFILE usually means this user's inotify instances are spent (fs.inotify.max_user_instances; inside a user namespace also /proc/sys/user/max_inotify_instances): find who holds them with `find /proc/*/fd -lname anon_inode:inotify 2>/dev/null | cut -d/ -f3 | sort | uniq -c`, or raise the limit: `sysctl -w fs.inotify.max_user_instances=1024` (and in /etc/sysctl.d/ to keep it); it can also mean this process is out of descriptors (`ulimit -n`).")
	case goos == "darwin":
		m = append(m, "waiting: kqueue is unavailable ("+k.Wake.Detail+"), so a lock waiter sleeps on a timed backoff (5 ms doubling to 100 ms between attempts) instead of being woken by the release: the lock still works, but a hand-off can be 100 ms late. This usually means the process is out of descriptors: raise `ulimit -n`.")
	default:
		m = append(m, "waiting: there is no waker on "+goos+", so a lock waiter sleeps on a timed backoff (5 ms doubling to 100 ms between attempts) and notices a release at most 100 ms late; nothing to change.")
	}
	if k.Portable {
		m = append(m, "this binary was built with the exactfs_portable tag, which runs the fallbacks of systems without inotify, OFD locks and the lease probe even on Linux (a test build): use a normal build in production.")
	}
	return m
}

// waker names a waker the way the doctor's text uses it.
func waker(name string) string {
	switch name {
	case "kqueue":
		return "kqueue EVFILT_VNODE"
	}
	return name
}

// aclMeaning is what doctor says about who else can read a file: the probe
// looks for POSIX ACLs, which macOS does not have; its extended ACLs are
// another mechanism the probe does not see, so there "no POSIX ACLs" must
// not read as "the mode bits decide".
func aclMeaning(posix bool, goos string) string {
	switch {
	case goos == "darwin":
		return "macOS extended ACLs (chmod +a, shown by ls -le) can grant access beyond the mode bits: mode 0600 alone does not prove a file is owner-only. The store removes and verifies them on what it creates; other files are not checked."
	case posix:
		return "POSIX ACLs are supported: mode 0600 alone does not prove a file is owner-only here; an ACL entry can grant access too, so owner-only checks must clear and verify ACLs."
	}
	return "no POSIX ACLs: the mode bits alone decide who can read a file here."
}

func writeHostIdentity(w io.Writer, configRoot string) {
	root := configRoot
	if root == "" {
		var err error
		if root, err = liveness.DefaultConfigRoot(); err != nil {
			fmt.Fprintf(w, "host id: unavailable: %v\n", err)
			return
		}
	}
	h, err := liveness.LoadHostIdentity(root)
	if err != nil {
		fmt.Fprintf(w, "host id: unavailable: %v\n  (the lock commands will fail until it can be established)\n", err)
		return
	}
	fmt.Fprintf(w, "host id:      %s\n", h.ID)
	if h.LegacyID != "" {
		fmt.Fprintf(w, "legacy id:    %s (records carrying it are also recognized as this host's)\n", h.LegacyID)
	}
	fmt.Fprintf(w, "config root:  %s (holds %s)\n", root, liveness.SecretFileName)
	if boot, err := liveness.BootID(); err == nil {
		fmt.Fprintf(w, "boot id:      %s\n", boot)
	}
	if ev, err := liveness.Self(); err == nil {
		format := ev.StartTimeFormat
		if format == "" {
			// /proc unreadable, or macOS, where no ps text is safe from
			// every TypeScript build (liveness.StartTime).
			format = `none: records say "unknown", so a reused pid is not told from its holder`
		}
		fmt.Fprintf(w, "start times:  %s\n", format)
	}
}

// wrap breaks s into lines of at most width columns, indenting the rest.
func wrap(s string, width int, indent string) string {
	var b strings.Builder
	col := 0
	for i, word := range strings.Fields(s) {
		if i > 0 {
			if col+1+len(word) > width {
				b.WriteString("\n" + indent)
				col = len(indent)
			} else {
				b.WriteByte(' ')
				col++
			}
		}
		b.WriteString(word)
		col += len(word)
	}
	return b.String()
}

// displayFS spells a filesystem name the way people write it: NFS, FUSE, tmpfs.
func displayFS(name string) string {
	if len(name) <= 4 && !strings.Contains(name, " ") {
		return strings.ToUpper(name)
	}
	return name
}
