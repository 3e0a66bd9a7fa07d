package main

import (
	"strconv"
	"strings"
)

// demoEvent is one line from a worker, parsed.
type demoEvent struct {
	kind    string // enter, done, ack, retry
	k       int
	mono    int64
	acquire int64
	dup     bool
}

func parseDemoEvent(line string) (demoEvent, bool) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return demoEvent{}, false
	}
	ev := demoEvent{kind: f[0]}
	var err error
	if ev.k, err = strconv.Atoi(f[1]); err != nil {
		return demoEvent{}, false
	}
	switch {
	case ev.kind == "enter" && len(f) == 4:
		ev.mono, _ = strconv.ParseInt(f[2], 10, 64)
		ev.acquire, _ = strconv.ParseInt(f[3], 10, 64)
	case ev.kind == "done" && len(f) == 3:
		ev.mono, _ = strconv.ParseInt(f[2], 10, 64)
	case ev.kind == "ack" && len(f) == 3:
		ev.dup = f[2] == "dup"
	case ev.kind == "retry", ev.kind == "paused" && len(f) == 2:
	default:
		return demoEvent{}, false
	}
	return ev, true
}
