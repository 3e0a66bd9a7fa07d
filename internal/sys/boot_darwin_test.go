package sys

import (
	"testing"
	"time"
)

// On a Mac: the boot session is a UUID that does not change within a boot,
// and the boot started in the past.
func TestBootSession(t *testing.T) {
	id, start, err := BootSession()
	if err != nil {
		t.Fatal(err)
	}
	id2, start2, err := BootSession()
	if err != nil || id2 != id {
		t.Fatalf("boot session changed within a boot: %q then %q (%v)", id, id2, err)
	}
	if !start.Before(time.Now()) || start2.Sub(start).Abs() > time.Second {
		t.Fatalf("boot time %v then %v, now %v", start, start2, time.Now())
	}
}

// On a Mac: the id alone is BootSession's.
func TestBootSessionID(t *testing.T) {
	id, _, err := BootSession()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := BootSessionID(); err != nil || got != id {
		t.Fatalf("BootSessionID = %q, %v; BootSession's id %q", got, err, id)
	}
}
