package liveness

import (
	"errors"

	"github.com/exactfs/exactfs/internal/sys"
	"golang.org/x/sys/windows"
)

// The attestation on Windows (issue 22): LockFileEx, exclusive, on
// [attestStart, attestSpan) of the record file.
//
// Why that range: a Windows byte-range lock is mandatory. While a handle
// holds it, ReadFile and WriteFile of the locked bytes through any other
// handle fail, so the Linux range [0, 2^40), which covers the record,
// would stop every reader of the record (TypeScript peers included) from
// reading it. Bytes beyond 2^39 are no record's, and no reader reads them;
// a lock beyond the end of the file is allowed and blocks nothing.
//
// Why a probe takes the lock: Windows has no F_GETLK. A reader asks by
// taking one byte of the range, exclusive and without waiting, through
// its own handle on the record: ERROR_LOCK_VIOLATION means a handle holds
// the range (the holder's is there: Alive); success means none does (the
// holder's handle is gone, however its process ended: Dead), and the
// byte is unlocked at once. The holder takes its lock once, before the
// record claims it, and never again, so a prober holding the byte for an
// instant never makes a holder's lock fail; two probers at once may see
// each other's byte and read Alive, the safe side. Locks belong to the
// handle that took them (and its duplicates): the holder's own second
// handle sees the lock like any other process does, which is what the
// store's once-per-volume visibility check relies on.
const attestStart = attestSpan / 2

func holdAttestation(fd int) error {
	return sys.OFDLock(fd, attestStart, attestSpan-attestStart)
}

func attestationHeld(fd int) (held, known bool) {
	switch err := sys.OFDTryLock(fd, attestStart, 1); {
	case err == nil:
		// Nobody holds the range. The unlock cannot change that answer;
		// if it failed, the byte stays ours until this handle closes,
		// which can only make another prober wait.
		sys.OFDUnlock(fd, attestStart, 1)
		return false, true
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return true, true
	}
	return false, false
}
