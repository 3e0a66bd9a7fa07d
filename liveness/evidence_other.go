//go:build !linux && !darwin && !windows

package liveness

import (
	"fmt"
	"runtime"
)

// supported is false: this platform has none of the process evidence (start
// time, boot id, process probe) in a form the peers would read the same
// way. Every probe fails, and the Judge answers Unknown, which keeps every
// lock it cannot judge.
// pidNamespaces: the platform has pid namespaces (Evidence.InitialPidNS).
const pidNamespaces = false

const supported = false

func unsupportedErr(what string) error {
	return fmt.Errorf("liveness: %s is %w on %s", what, errUnsupported, runtime.GOOS)
}

func startTime(int) (string, string, error) { return "", "", unsupportedErr("process start time") }

func procStartTime(int) (string, error) { return "", unsupportedErr(FormatLinuxProc + " start time") }

func psStartTime(int) (string, error) { return "", unsupportedErr(FormatPsUTC + " start time") }

func bootID() (string, error) { return "", unsupportedErr("boot id") }

func pidfdIno(int) (uint64, error) { return 0, nil }

func pidNS(int) (uint64, error) { return 0, nil }

func signal0(int) error { return unsupportedErr("probing a process") }

func zombie(int) (bool, error) { return false, unsupportedErr("process state") }

func sameProcClock(int) error { return nil }
