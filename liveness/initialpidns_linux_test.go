package liveness

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestInitialPidNS: the inode test of Evidence.InitialPidNS, and its answer
// for this process and for a child in a new pid namespace (unshare, when
// this process may make one).
func TestInitialPidNS(t *testing.T) {
	for ns, want := range map[uint64]bool{0xEFFFFFFC: true, 0xF0000000: false, 4026532173: false, 0: false} {
		if got := (Evidence{PidNS: ns}).InitialPidNS(); got != want {
			t.Errorf("PidNS %#x: InitialPidNS %v, want %v", ns, got, want)
		}
	}
	self, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	link, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		t.Skipf("cannot read /proc/self/ns/pid: %v", err)
	}
	if got, want := self.InitialPidNS(), link == "pid:[4026531836]"; got != want {
		t.Errorf("this process (%s, PidNS %d): InitialPidNS %v", link, self.PidNS, got)
	}
	if os.Geteuid() != 0 {
		return
	}
	out, err := exec.Command("unshare", "--pid", "--fork", "readlink", "/proc/self/ns/pid").Output()
	if err != nil {
		t.Skipf("unshare: %v", err)
	}
	if s := strings.TrimSpace(string(out)); s == "pid:[4026531836]" {
		t.Errorf("a child in a new pid namespace reads %s, the initial namespace's inode", s)
	}
}
