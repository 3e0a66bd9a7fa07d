// Package fdtest holds test helpers about descriptor numbers.
package fdtest

import (
	"os"
	"testing"
)

// Grab opens dir n times and keeps the descriptors open until the test
// ends. The kernel hands out the lowest free numbers, so a descriptor a
// Close gave back is among them: an operation still using that number
// would act on dir.
func Grab(t testing.TB, dir string, n int) {
	t.Helper()
	for range n {
		f, err := os.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
	}
}
