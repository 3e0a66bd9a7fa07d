//go:build !exactfs_portable

package statelock

import (
	"errors"
	"os"

	"github.com/exactfs/exactfs"
)

// Kernel-attested ownership on Windows (issue 22 step 4): the holder of a
// record takes LockFileEx, exclusive and without waiting, on the bytes
// [winAttestStart, winAttestStart+winAttestLen) of the record's file,
// through the handle it created or rewrote the record with, before the
// bytes that claim the lock ("kernel_lock":true) are written, and keeps
// that handle open for as long as it owns the record. Windows releases a
// handle's byte-range locks when the handle is closed or its process
// ends, however it ends (TerminateProcess included), so a judge that finds
// the range free on the very file whose bytes it judged knows the holder
// is gone, at once and whatever its pid now names.
//
// Why these bytes, and not Linux's [0, queueBase): a Windows byte-range
// lock is mandatory. While a handle holds one, ReadFile of the locked
// bytes through any other handle fails, so a lock over the record's bytes
// would stop every reader of F.lock, TypeScript peers first. Bytes beyond
// 2^39 are no record's (a record is under 1 KiB) and no reader reads them,
// and a lock beyond a file's end is allowed and blocks nothing. The range
// is liveness's attestation range on Windows ([2^39, 2^40),
// liveness/attest_windows.go), so the judge asks liveness.Attested, the
// question the store's leases ask too (TestWindowsHolderRangeIsLiveness's
// proves the two agree). There are no kernel slots on Windows (a slot is a
// pidfd inode) and no waiter queue (ofdSupported is false: no F_GETLK to
// look at a queue without joining it), so nothing else locks these bytes.
//
// Why a judge may take the lock to ask: Windows has no F_GETLK. Taking one
// byte of the range, exclusive and without waiting, through the judge's
// own handle answers the question (ERROR_LOCK_VIOLATION: the holder's
// lock is there), and the byte is unlocked at once. A holder takes its
// lock before its record claims it, so a judge's byte can only make a
// taker of a released tombstone retry (reuseReleased) or a creator find
// contention, never a holder lose a lock it has.
const (
	winAttestStart = 1 << 39
	winAttestLen   = 1 << 39
)

// ofdSupported is false on Windows: no waiter queue, no look at a holder
// through a shared descriptor, no claim kept by its kernel lock alone
// (SPEC §4.8 is the Linux cohort's). The attestation itself is on
// (kernelAttest).
const ofdSupported = false

// kernelAttest: holders take the attestation lock and write "kernel_lock"
// (Record.KernelLock), and judges ask the kernel about such records.
const kernelAttest = true

// kernelRule reports whether a record's holder may be judged by the
// attestation lock: it says it holds one, and carries the boot id this
// process has, which on Windows is none (no boot id source is adopted,
// as for the store's leases, store/lease_boot_windows.go). A record with
// a boot id was written on Linux (a share, WSL), whose locks this kernel
// may not see, so the pid rules judge it. No boot id is needed here: a
// byte-range lock lives with the file, so after a reboot there is neither
// holder nor lock (Dead is right), and an SMB server keeps every client's
// locks and refuses a conflicting one, so a holder on another machine
// reads as alive.
func kernelRule(r *Record, selfBoot string) bool { return r.KernelLock && r.BootID == selfBoot }

var (
	errOFDConflict    = errors.New("another handle holds the attestation lock on the record")
	errOFDUnsupported = errors.New("the filesystem takes no byte-range locks")
)

// ofdLock takes the attestation lock on f (open for writing or reading).
func ofdLock(f *os.File) error {
	return lockAnswer(exactfs.TryLockRange(f, exactfs.LockExclusive, winAttestStart, winAttestLen))
}

// ofdUnlock drops the lock ofdLock took on f before f is closed (closing
// drops it too); on a handle that holds none it fails, and nothing changes.
func ofdUnlock(f *os.File) { exactfs.UnlockRange(f, winAttestStart, winAttestLen) }

// ofdHeld asks whether another handle holds the attestation lock on the
// file f is open on, by taking its first byte for an instant (see above).
// known is false when the file or filesystem takes no such lock.
func ofdHeld(f *os.File) (held, known bool) {
	ok, err := exactfs.TryLockRange(f, exactfs.LockExclusive, winAttestStart, 1)
	switch {
	case err != nil:
		return false, false
	case !ok:
		return true, true
	}
	exactfs.UnlockRange(f, winAttestStart, 1)
	return false, true
}
