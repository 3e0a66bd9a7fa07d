//go:build !windows

package liveness

import "github.com/exactfs/exactfs/internal/sys"

// holdAttestation locks the attestation range of the record file fd is
// open on: [0, attestSpan), all of the record and far beyond it.
func holdAttestation(fd int) error { return sys.OFDLock(fd, 0, attestSpan) }

// attestationHeld asks the kernel (F_OFD_GETLK, which takes nothing)
// whether another open file description holds a lock in that range.
func attestationHeld(fd int) (held, known bool) { return sys.OFDHeld(fd, 0, attestSpan) }
