//go:build exactfs_portable

package sys

// Portable is true: see portable_off.go.
const Portable = true
