// Package holdlog records and checks the hold intervals of a lock, so that a
// multi-process test can prove mutual exclusion by non-overlap of critical
// sections rather than only by a final counter.
//
// The format is the one the TypeScript reference worker writes
// (shared/interop/ts-seed/bin/worker.js) and its bin/check-overlap.py reads:
// one line per event, "enter <pid> <ns>" on entering the critical section
// and "exit <pid> <ns>" on leaving it, where <ns> is the host's monotonic
// clock in nanoseconds, the one Node's process.hrtime reads there
// (CLOCK_MONOTONIC on Linux, CLOCK_UPTIME_RAW on macOS, the performance
// counter on Windows: see Now). That clock is one per host, so the logs of
// Go and TypeScript processes on one machine can be checked together.
//
// Each line is written with a single write(2) on a file opened with
// O_APPEND, so lines from concurrent writers never interleave and a process
// killed between two events leaves whole lines only.
package holdlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// LogEnter writes "enter <pid> <now>" to w in one Write.
func LogEnter(w io.Writer, pid int) error { return logEvent(w, "enter", pid) }

// LogExit writes "exit <pid> <now>" to w in one Write.
func LogExit(w io.Writer, pid int) error { return logEvent(w, "exit", pid) }

func logEvent(w io.Writer, kind string, pid int) error {
	ns, err := Now()
	if err != nil {
		return err
	}
	b := make([]byte, 0, 48)
	b = append(b, kind...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(pid), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, ns, 10)
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// A Log appends this process's events to one file.
type Log struct {
	f   *os.File
	pid int
}

// Open opens (creating it, mode 0644) the log file at path for appending.
func Open(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &Log{f: f, pid: os.Getpid()}, nil
}

// Enter records that this process entered its critical section.
func (l *Log) Enter() error { return LogEnter(l.f, l.pid) }

// Exit records that this process left its critical section.
func (l *Log) Exit() error { return LogExit(l.f, l.pid) }

// Close closes the file.
func (l *Log) Close() error { return l.f.Close() }

// An Interval is one critical section: the enter and the matching exit of
// one process in one log file.
type Interval struct {
	PID         int
	Enter, Exit int64  // CLOCK_MONOTONIC ns; Exit is 0 for an open interval
	Where       string // file:line of the enter
}

// A Report summarizes a check.
type Report struct {
	Intervals      []Interval    // closed intervals, sorted by Enter
	Open           []Interval    // enters that never got an exit (killed holders)
	Overlaps       [][2]Interval // pairs of closed intervals that overlap
	MaxConcurrency int           // most closed intervals in force at one instant
	Processes      int           // distinct pids among closed intervals
}

func (r Report) String() string {
	return fmt.Sprintf("%d intervals from %d processes, %d open, %d overlaps, max concurrency %d",
		len(r.Intervals), r.Processes, len(r.Open), len(r.Overlaps), r.MaxConcurrency)
}

// CheckNoOverlap reads the logs and returns an error if any two critical
// sections overlap, if a line is malformed or unpaired, or if an enter has no
// exit. It is bin/check-overlap.py without --allow-open.
func CheckNoOverlap(logs ...string) error {
	_, err := Check(false, logs...)
	return err
}

// Check reads the logs and checks them like [CheckNoOverlap]. With allowOpen,
// an enter that never got its exit (a holder killed inside its critical
// section) is reported in Report.Open and left out of the overlap check
// instead of being an error; a later enter of the same pid in the same file
// (a restarted worker that got the pid again) then starts a new interval.
//
// Enters and exits pair within one file and one pid, so give each process
// (or each incarnation of a restarted worker) its own file when pids can be
// reused. Intervals that merely touch (one's exit equal to the next's enter)
// do not overlap.
func Check(allowOpen bool, logs ...string) (Report, error) {
	var r Report
	var errs []error
	for _, path := range logs {
		intervals, open, err := readLog(path, allowOpen)
		r.Intervals = append(r.Intervals, intervals...)
		r.Open = append(r.Open, open...)
		errs = append(errs, err)
	}
	if !allowOpen {
		for _, iv := range r.Open {
			errs = append(errs, fmt.Errorf("%s: pid %d entered at %d and never exited", iv.Where, iv.PID, iv.Enter))
		}
	}
	sort.Slice(r.Intervals, func(i, j int) bool {
		a, b := r.Intervals[i], r.Intervals[j]
		if a.Enter != b.Enter {
			return a.Enter < b.Enter
		}
		return a.Exit < b.Exit
	})
	// Sweep by enter, remembering the interval that reaches furthest.
	var furthest *Interval
	pids := map[int]bool{}
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		pids[iv.PID] = true
		if furthest != nil && iv.Enter < furthest.Exit {
			r.Overlaps = append(r.Overlaps, [2]Interval{*furthest, *iv})
		}
		if furthest == nil || iv.Exit > furthest.Exit {
			furthest = iv
		}
	}
	r.Processes = len(pids)
	r.MaxConcurrency = maxConcurrency(r.Intervals)
	for i, o := range r.Overlaps {
		if i == 10 {
			errs = append(errs, fmt.Errorf("... and %d more overlaps", len(r.Overlaps)-10))
			break
		}
		errs = append(errs, fmt.Errorf("overlap: pid %d [%d, %d] (%s) with pid %d [%d, %d] (%s)",
			o[0].PID, o[0].Enter, o[0].Exit, o[0].Where, o[1].PID, o[1].Enter, o[1].Exit, o[1].Where))
	}
	if err := errors.Join(errs...); err != nil {
		return r, fmt.Errorf("hold logs %s: %s: %w", strings.Join(logs, " "), r, err)
	}
	return r, nil
}

func maxConcurrency(intervals []Interval) int {
	type event struct {
		at    int64
		delta int
	}
	events := make([]event, 0, 2*len(intervals))
	for _, iv := range intervals {
		events = append(events, event{iv.Enter, 1}, event{iv.Exit, -1})
	}
	// At an equal instant exits come first: touching intervals do not overlap.
	sort.Slice(events, func(i, j int) bool {
		if events[i].at != events[j].at {
			return events[i].at < events[j].at
		}
		return events[i].delta < events[j].delta
	})
	running, peak := 0, 0
	for _, e := range events {
		running += e.delta
		peak = max(peak, running)
	}
	return peak
}

func readLog(path string, allowOpen bool) (closed, open []Interval, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var errs []error
	pending := map[int]Interval{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		where := path + ":" + strconv.Itoa(line)
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		var pid int
		var ns int64
		var perr error
		if len(fields) == 3 {
			pid, perr = strconv.Atoi(fields[1])
			if perr == nil {
				ns, perr = strconv.ParseInt(fields[2], 10, 64)
			}
		}
		if len(fields) != 3 || perr != nil || (fields[0] != "enter" && fields[0] != "exit") {
			errs = append(errs, fmt.Errorf("%s: malformed line %q", where, sc.Text()))
			continue
		}
		if fields[0] == "enter" {
			if prev, ok := pending[pid]; ok {
				if !allowOpen {
					errs = append(errs, fmt.Errorf("%s: pid %d entered again without an exit", where, pid))
				}
				open = append(open, prev)
			}
			pending[pid] = Interval{PID: pid, Enter: ns, Where: where}
			continue
		}
		iv, ok := pending[pid]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: exit of pid %d without an enter", where, pid))
			continue
		}
		delete(pending, pid)
		if ns < iv.Enter {
			errs = append(errs, fmt.Errorf("%s: exit of pid %d precedes its enter", where, pid))
			continue
		}
		iv.Exit = ns
		closed = append(closed, iv)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", path, err))
	}
	for _, iv := range pending {
		open = append(open, iv)
	}
	sort.Slice(open, func(i, j int) bool { return open[i].Enter < open[j].Enter })
	return closed, open, errors.Join(errs...)
}
