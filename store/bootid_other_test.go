//go:build unix && !linux && !darwin

package store

import "testing"

// kernelBootID: the BSDs have no boot id exactfs reads; records carry none.
func kernelBootID(*testing.T) string { return "" }
