package statelock

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// A holder killed right after the in-place rewrite (where the truncate was
// before SPEC §4.2's padding) must leave a
// whole record: the release rewrites a long live record into a shorter
// tombstone, so without padding the file would be the tombstone followed by
// the tail of the live record, which no rule reclaims. The hook reads the
// file exactly where a kill would freeze it.
func TestRewriteKilledBeforeTruncateLeavesValidRecord(t *testing.T) {
	e := newEnv(t)
	h, err := Lock(context.Background(), e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	live := mustRead(t, e.lock)
	var frozen [][]byte
	lockFrozen := false
	defer hook.Set(hook.LockRewriteBeforeTruncate, func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("the hook names %s, which cannot be read: %v", path, err)
			return
		}
		frozen = append(frozen, b)
		lockFrozen = lockFrozen || path == e.lock
	})()
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	if !lockFrozen {
		t.Fatal("the release did not rewrite F.lock in place")
	}
	for _, b := range frozen {
		if _, err := ParseRecord(b); err != nil {
			t.Fatalf("a kill before the truncate would leave a malformed record %q: %v", b, err)
		}
		if len(b) < len(live) && bytes.Equal(b, live[:len(b)]) {
			t.Fatalf("record was torn: %q", b)
		}
	}
	// SPEC §4.2 padding: no truncate follows; the file keeps its size and
	// holds the tombstone followed by spaces only. (Where the live record is
	// shorter than the tombstone, as on Windows, whose records carry no
	// start time and no evidence but kernel_lock, the tombstone grows the
	// file and needs no padding.)
	tomb := mustRead(t, e.lock)
	bare := bytes.TrimRight(tomb, " ")
	if len(live) > len(bare) {
		if len(tomb) != len(live) || len(bare) >= len(tomb) {
			t.Fatalf("after the release F.lock must be the tombstone padded to the live record's %d bytes, got %q", len(live), tomb)
		}
	} else if len(tomb) != len(bare) {
		t.Fatalf("after the release F.lock must be the tombstone, longer than the live record's %d bytes, unpadded, got %q", len(live), tomb)
	}
	rec, err := ParseRecord(mustRead(t, e.lock))
	if err != nil || !rec.Released {
		t.Fatalf("after release: %+v %v", rec, err)
	}
}

func TestPadTo(t *testing.T) {
	if got := string(padTo([]byte(`{"a":1}`), 10)); got != `{"a":1}   ` {
		t.Fatalf("%q", got)
	}
	if got := string(padTo([]byte(`{"a":1}`), 3)); got != `{"a":1}` {
		t.Fatalf("%q", got)
	}
}
