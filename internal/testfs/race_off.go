//go:build !race

package testfs

// Race reports whether the test binary was built with the race detector
// (see race_on.go).
const Race = false
