package liveness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// nestedOwner reports whether a process that lives in a pid namespace
// nested below ours has pid as its pid there and startTime as its start
// time (linux-proc-v1: field 22 of stat counts clock ticks since boot, the
// same number in every pid namespace of one time namespace).
//
// A record without pid_ns (the TypeScript reference's, an older exactfs's)
// written in such a namespace (a container sharing the directory, the
// machine id and the config root, so its records name this host) carries a
// pid that in our namespace is free or another process's. Judged by that
// pid alone, the live owner would be dead and its lock taken. Every process
// of a nested namespace is also a process of ours, and /proc/<pid>/status
// lists its pid in each namespace from ours down to its own (NSpid), so it
// can be found. Only the way to a Dead verdict pays for the scan of /proc.
//
// A candidate in another time namespace, whose start time cannot be
// compared with one read here, counts as a match (fail closed). An error is
// returned when /proc is not our namespace's or cannot be listed: then no
// nested owner can be ruled out.
func nestedOwner(pid int, startTime string) (bool, error) {
	if !procIsOurs() {
		return false, errForeignProc
	}
	want := []byte(strconv.Itoa(pid))
	// A waiter behind a live nested owner asks again at every attempt:
	// the process found last time is looked at first, one process instead
	// of all of them.
	lastNested.Lock()
	last := lastNested.found
	if lastNested.pid != pid || lastNested.start != startTime {
		last = 0
	}
	lastNested.Unlock()
	if last != 0 && isNestedOwner(last, want, startTime) {
		return true, nil
	}
	nestedScans.Add(1)
	d, err := os.Open("/proc")
	if err != nil {
		return false, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, fmt.Errorf("liveness: list /proc: %w", err)
	}
	for _, name := range names {
		p, err := strconv.Atoi(name)
		if err != nil || p <= 0 || !isNestedOwner(p, want, startTime) {
			continue
		}
		lastNested.Lock()
		lastNested.pid, lastNested.start, lastNested.found = pid, startTime, p
		lastNested.Unlock()
		return true, nil
	}
	return false, nil
}

// nestedScans counts nestedOwner's walks of /proc (for its tests).
var nestedScans atomic.Int64

// lastNested is the process (our pid) nestedOwner found last, for the
// recorded pid and start time it was asked about.
var lastNested struct {
	sync.Mutex
	pid   int
	start string
	found int
}

// isNestedOwner reports whether our process p lives in a nested pid
// namespace as want (its innermost pid), with the start time startTime or
// in another time namespace (see nestedOwner). A process that exits
// meanwhile is none; a status that cannot be read (hidepid) is another
// user's, whom kill(2) would have answered EPERM for in its own namespace.
func isNestedOwner(p int, want []byte, startTime string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/status")
	if err != nil || !innermostPid(b, want) {
		return false
	}
	switch err := sameProcClock(p); {
	case errors.Is(err, errOtherTimeNS):
		return true
	case err != nil:
		return false
	}
	st, err := readProcStat(p)
	return err == nil && st.StartTime == startTime
}

// innermostPid reports whether status (the bytes of /proc/<pid>/status)
// has an NSpid line with more than one pid, the last of which is want: a
// process of a namespace below ours, known there as want.
func innermostPid(status, want []byte) bool {
	i := bytes.Index(status, []byte("\nNSpid:"))
	if i < 0 {
		return false
	}
	line := status[i+len("\nNSpid:"):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	f := bytes.Fields(line)
	return len(f) > 1 && bytes.Equal(f[len(f)-1], want)
}
