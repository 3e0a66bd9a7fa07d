package main

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

func init() { platformDoctor = runDoctorWindows }

// gateShut is what doctor says while every program keeps internal/sys's
// Windows gate shut (issue 22: the lock has no Windows attestation yet).
const gateShut = "Windows support is not complete: the lock refuses. Until the lock's Windows attestation lands (issue 22), lock, update, write, rm, status, stat and the store refuse on Windows (unsupported on windows) and create nothing; what follows is what this volume will offer then."

// runDoctorWindows is doctor on Windows: the Unix probes (rename flags,
// POSIX ACLs, OFD locks, statfs) mean nothing here, so it reports the
// volume's file system and flags, whether an owner-only DACL is kept and
// whether LockFileEx refuses a second handle (exactfs.ProbeWindows, in a
// private directory it removes), the machine GUID the host id derives
// from, and the gate's state.
func runDoctorWindows(e *env, o *doctorOptions, dir string) error {
	w := e.stdout
	fmt.Fprintf(w, "exactfs doctor: %s (%s/%s)\n\n", dir, runtime.GOOS, runtime.GOARCH)
	if !exactfs.WindowsReady() {
		fmt.Fprintf(w, "%s\n\n", wrap(gateShut, 76, ""))
	}
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
		m = append(m, "the volume says it keeps ACLs, but an owner-only DACL did not read back as written (Wine, for one, keeps none): owner-only checks refuse here (acl_present, acl_verify_failed), and so do the store and the config root.")
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
