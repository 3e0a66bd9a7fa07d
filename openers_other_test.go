//go:build unix && (!linux || exactfs_portable)

package exactfs

import (
	"os"
	"path/filepath"
	"testing"
)

// Without Linux's lease probe (macOS, the BSDs) every question is
// unanswered: Writer says AnswerUnknown and NoWriter and Unopened prove nothing,
// even for a file nobody else has open.
func TestNoProbeHere(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if a, why := ProbeWriter(f); a != AnswerUnknown || why == "" {
		t.Fatalf("Writer: %v %q, want unknown with a reason", a, why)
	}
	if why, err := ProbeNoWriter(f); why == "" || err != nil {
		t.Fatalf("NoWriter: %q, %v", why, err)
	}
	if why, err := ProbeUnopened(f); why == "" || err != nil {
		t.Fatalf("Unopened: %q, %v", why, err)
	}
}
