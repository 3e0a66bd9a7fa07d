package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
	"github.com/exactfs/exactfs/internal/testfs"
	"github.com/exactfs/exactfs/liveness"
	"golang.org/x/sys/windows"
)

// TestWindowsDoctorReportsWindowsFacts: exactfs doctor on Windows, run as
// a process with the gate shut (no opt-in), reports the volume's
// file system, whether an owner-only DACL is kept, whether LockFileEx
// refuses a second handle, the machine GUID, and that the lock refuses
// (the gate), instead of the Unix probes; and leaves the directory as it
// was. On the old code doctor walked DIR through the gated primitives and
// exited 74 ("unsupported on windows") with nothing reported. Under Wine,
// which keeps no DACL, the DACL line is "no".
func TestWindowsDoctorReportsWindowsFacts(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	before := testfs.Tree(t, dir)
	c := exec.Command(exe, "doctor", dir)
	c.Env = append(envWithoutOptIn(), runAsCLIEnv+"=1")
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	if err := c.Run(); err != nil {
		t.Fatalf("exactfs doctor: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	out := stdout.String()
	t.Logf("exactfs doctor:\n%s", out)
	if !strings.Contains(unwrapped(out), "Windows gate: shut (EXACTFS_WINDOWS is not set). lock, update, write, rm, status, stat, the store and demo refuse") {
		t.Errorf("doctor's report does not say that the lock refuses")
	}
	guid, err := liveness.MachineID()
	if err != nil {
		t.Fatal(err)
	}
	wine := windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
	row := func(name, mark string) string { return fmt.Sprintf("  %-19s %s  ", name, mark) }
	dacl := row("owner-only DACL", "yes")
	if wine {
		dacl = row("owner-only DACL", "no ")
	}
	for _, want := range []string{
		"filesystem          ",
		dacl,
		row("LockFileEx", "yes"),
		row("atomic exchange", "no "),
		"machine GUID: " + guid,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's report lacks %q", want)
		}
	}
	for _, unix := range []string{"POSIX ACLs", "OFD locks", "rename no-replace"} {
		if strings.Contains(out, unix) {
			t.Errorf("doctor's report on Windows shows the Unix probe %q", unix)
		}
	}
	if after := testfs.Tree(t, dir); !slices.Equal(after, before) {
		t.Errorf("doctor left something behind: %q -> %q", before, after)
	}
}

// TestWindowsDoctorMeanings: what doctor says a volume's facts mean: FAT
// and exFAT keep no ACLs (acl_unavailable: nothing there can be
// owner-only), a volume that claims ACLs but keeps none refuses owner-only,
// and without POSIX names an open file blocks a replace.
func TestWindowsDoctorMeanings(t *testing.T) {
	has := func(f sys.WindowsFacts, want string) {
		t.Helper()
		if m := strings.Join(windowsMeanings(f), "\n"); !strings.Contains(m, want) {
			t.Errorf("%+v: the meanings lack %q:\n%s", f, want, m)
		}
	}
	has(sys.WindowsFacts{FSName: "exFAT"}, "acl_unavailable")
	has(sys.WindowsFacts{FSName: "NTFS", ACLs: true, DACL: os.ErrInvalid}, "acl_verify_failed")
	has(sys.WindowsFacts{FSName: "NTFS", ACLs: true, PosixNames: true}, "owner-only is a protected DACL")
	has(sys.WindowsFacts{FSName: "NTFS", ACLs: true}, "no POSIX delete or rename")
	has(sys.WindowsFacts{FSName: "NTFS", ACLs: true, Lock: os.ErrInvalid}, "could not be attested")
}
