package main

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/liveness"
)

func init() { platformDoctor = runDoctorWindows }

// gateLine is doctor's first word on Windows: whether this process may use
// exactfs's Windows code (internal/sys's gate), and why. Without the
// opt-in every operation but doctor refuses; with it, what runs is
// verified under Wine only.
func gateLine() string {
	open, why := sys.GateState()
	if open {
		return "Windows gate: open (" + why + "). exactfs's operations run here, on code verified under Wine only; " +
			"what only real Windows can verify (reparse points, POSIX delete and rename, DACLs kept on disk, durability) " +
			"has not been verified: see " + sys.OptInDoc + "."
	}
	return "Windows gate: shut (" + why + "). lock, update, write, rm, status, stat, the store and demo refuse " +
		"(unsupported) and create nothing. exactfs's Windows support is verified under Wine only, not on a real " +
		"Windows machine; to use it anyway, set " + sys.OptInEnv + "=" + sys.OptInValue + " (" + sys.OptInDoc +
		", lists what is not verified). What follows is what this volume offers."
}

// runDoctorWindows is doctor on Windows: the Unix probes (rename flags,
// POSIX ACLs, OFD locks, statfs) mean nothing here, so it reports the
// volume's file system and flags, whether an owner-only DACL is kept and
// whether LockFileEx refuses a second handle (exactfs.ProbeWindows, in a
// private directory it removes), the machine GUID the host id derives
// from, and first of all the gate's state and why.
func runDoctorWindows(e *env, o *doctorOptions, dir string) error {
	w := e.stdout
	fmt.Fprintf(w, "exactfs doctor: %s (%s/%s)\n\n", dir, runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "%s\n\n", wrap(gateLine(), 76, ""))
	f, err := exactfs.ProbeWindows(dir)
	if err != nil {
		return fmt.Errorf("doctor: %w", err)
	}
	fmt.Fprintf(w, "  volume              %s\n", f.Volume)
	fmt.Fprintf(w, "  filesystem          %s\n", f.FSName)
	line := func(name string, ok bool, detail string) {
		mark := "no "
		if ok {
			mark = "yes"
		}
		fmt.Fprintf(w, "  %-19s %s  %s\n", name, mark, detail)
	}
	line("ACLs", f.ACLs, "the volume keeps security descriptors (FILE_PERSISTENT_ACLS)")
	line("owner-only DACL", f.DACL == nil, probeDetail(f.DACL, "a protected DACL for this user alone, written to a probe directory, read back as written"))
	line("LockFileEx", f.Lock == nil, probeDetail(f.Lock, "a range held through one handle refused a second, and was granted once unlocked"))
	line("hard links", f.HardLinks, "FILE_SUPPORTS_HARD_LINKS")
	line("reparse points", f.Reparse, "FILE_SUPPORTS_REPARSE_POINTS (symlinks, junctions: exactfs never follows them)")
	line("POSIX delete/rename", f.PosixNames, "FILE_SUPPORTS_POSIX_UNLINK_RENAME")
	line("atomic exchange", false, "Windows has no exchange of two names")
	fmt.Fprintln(w, "\nWhat this means:")
	for _, m := range windowsMeanings(f) {
		fmt.Fprintf(w, "  - %s\n", wrap(m, 74, "    "))
	}
	fmt.Fprintln(w)
	if guid, err := liveness.MachineID(); err != nil {
		fmt.Fprintf(w, "machine GUID: unavailable: %v\n", err)
	} else {
		fmt.Fprintf(w, "machine GUID: %s (HKLM\\SOFTWARE\\Microsoft\\Cryptography\\MachineGuid, as the TypeScript peers read it)\n", guid)
	}
	writeHostIdentity(w, o.configRoot)
	return nil
}

func probeDetail(err error, ok string) string {
	if err == nil {
		return ok
	}
	return err.Error()
}

// windowsMeanings turns the facts into consequences for a user of exactfs.
func windowsMeanings(f exactfs.WindowsFacts) []string {
	var m []string
	fs := strings.ToUpper(f.FSName)
	switch {
	case !f.ACLs:
		m = append(m, f.FSName+" keeps no ACLs (FAT and exFAT do not): nothing on it can be owner-only, so the store and the config root refuse here (acl_unavailable). Put them on an NTFS or ReFS volume.")
	case f.DACL != nil:
		m = append(m, "the volume says it keeps ACLs, but an owner-only DACL did not read back as written (Wine, for one, keeps none): owner-only checks refuse here (acl_present, acl_verify_failed), and so do the store and the config root; the lock commands (lock, update, status, recover) cannot establish this host's identity from a config root here (demo makes its own).")
	case fs == "NTFS" || fs == "REFS":
		m = append(m, f.FSName+": owner-only is a protected DACL that allows this user alone, applied and verified by the store.")
	default:
		m = append(m, f.FSName+" keeps DACLs, but exactfs is only tested on NTFS (and ReFS, where 128-bit file ids are refused): treat what you run here as untested.")
	}
	if f.Lock != nil {
		m = append(m, "LockFileEx did not behave as the lock needs (a second handle refused while the range is held): the lock could not be attested by the kernel on this volume.")
	} else {
		m = append(m, "LockFileEx works: when the lock lands, a killed holder's range is released by the kernel and its record can be reclaimed at once.")
	}
	if !f.PosixNames {
		m = append(m, "no POSIX delete or rename: a file another program holds open (a scanner, an editor) cannot be replaced or deleted until it closes it; WriteFile waits out short holders, then fails with EBUSY.")
	}
	m = append(m, "no atomic exchange on Windows: ReplaceExpected (write --expect) refuses with atomic_unavailable and changes nothing; exact unlink detaches with a no-replace rename (a successor that takes the name is kept).")
	return m
}
