package main

import (
	"strings"
	"testing"
)

// TestDoctorACLMeaning: on macOS doctor does not say that the mode bits
// alone decide access (extended ACLs grant it too, and the probe, which
// looks for POSIX ACLs, does not see them); elsewhere it says what the
// probe found. On 20b7f43 a Mac was told "the mode bits alone decide".
func TestDoctorACLMeaning(t *testing.T) {
	mac := aclMeaning(false, "darwin")
	for _, want := range []string{"chmod +a", "ls -le", "removes and verifies them on what it creates", "other files are not checked"} {
		if !strings.Contains(mac, want) {
			t.Errorf("darwin: %q lacks %q", mac, want)
		}
	}
	if strings.Contains(mac, "alone decide") {
		t.Errorf("darwin: %q", mac)
	}
	if got := aclMeaning(false, "linux"); !strings.Contains(got, "mode bits alone decide") {
		t.Errorf("linux without POSIX ACLs: %q", got)
	}
	if got := aclMeaning(true, "linux"); !strings.Contains(got, "POSIX ACLs are supported") {
		t.Errorf("linux with POSIX ACLs: %q", got)
	}
}
