//go:build !windows

package store

// kernelRuleBoot reports whether a record that claims the kernel
// attestation was written in this boot (its boot id is the current one),
// the kernel rule's precondition: a lock taken in another boot, or on
// another host's kernel, is not in this kernel's lock table, so its
// absence here proves nothing.
func kernelRuleBoot(recBoot string) bool { return recBoot != "" && recBoot == bootID() }
