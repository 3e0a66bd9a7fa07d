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
  filesystem type          from statfs

and say what each answer means for exactfs. On Windows it reports the
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
	fmt.Fprintln(w, "\nWhat this means:")
	for _, m := range meanings(r) {
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
		m = append(m, "FUSE: behaviour depends on the daemon (bindfs, for example, rejects rename flags); trust the probes above, not the name.")
	}
	if r.OFDLock.Supported {
		m = append(m, "OFD locks: a dead Go lock holder is recognized at once by the kernel, with no pid-reuse ambiguity.")
	} else {
		m = append(m, "no OFD locks: a lock holder is judged by pid, start time and boot id only (still safe: unprovable means alive).")
	}
	m = append(m, aclMeaning(r.ACL.Supported, runtime.GOOS))
	return m
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
