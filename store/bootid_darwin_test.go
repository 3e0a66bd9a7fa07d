package store

import (
	"testing"

	"github.com/exactfs/exactfs/internal/sys"
)

// kernelBootID is kern.bootsessionuuid, read through internal/sys rather
// than liveness, to check the one a lease record carries.
func kernelBootID(t *testing.T) string {
	id, _, err := sys.BootSession()
	if err != nil {
		t.Fatal(err)
	}
	return id
}
