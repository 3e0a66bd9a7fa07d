//go:build !windows

package liveness

import "testing"

// openPlatform has nothing to open outside Windows (see its Windows twin).
func openPlatform(testing.TB) {}

// openPlatformForHelper is openPlatform for a helper process.
func openPlatformForHelper() {}

// ownerOnlyTestDir has nothing to do outside Windows: t.TempDir makes
// directories 0700.
func ownerOnlyTestDir(testing.TB, string) {}
