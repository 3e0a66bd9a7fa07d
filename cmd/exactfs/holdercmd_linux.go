package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/exactfs/exactfs/liveness"
)

// holderCommand is the command line of the live process pid, the holder of
// a record with the given start time, as /proc shows it (lslocks cannot
// name the holder of an OFD lock). It is "" unless pid is in this pid
// namespace and still has the record's start time: a reused pid must not
// lend the holder another process's command line.
func holderCommand(pid int64, startTime, format string) string {
	if pid <= 0 || startTime == "" || format == "" {
		return ""
	}
	if now, err := liveness.StartTimeAs(int(pid), format); err != nil || now != startTime {
		return ""
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return ""
	}
	// Read again after the look at the start time: the pid could have
	// been reused between the two reads.
	if now, err := liveness.StartTimeAs(int(pid), format); err != nil || now != startTime {
		return ""
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) > maxCommandLine {
		b = append(b[:maxCommandLine], "..."...)
	}
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
}

// maxCommandLine bounds what status prints of a holder's command line.
const maxCommandLine = 300
