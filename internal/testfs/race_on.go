//go:build race

package testfs

// Race reports whether the test binary was built with the race detector,
// whose shadow memory multiplies a process's resident set: a test that
// bounds memory measures the builds users run, not this one.
const Race = true
