package store

import (
	"os"
	"strings"
	"testing"
)

// kernelBootID reads the boot id the way no store code does, to check the
// one a lease record carries.
func kernelBootID(t *testing.T) string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
