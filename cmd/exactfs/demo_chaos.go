package main

import (
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
)

// killLocked kills w after delay (SIGKILL; TerminateProcess on Windows,
// which is what os.Process.Signal does with it there), recording when.
func (r *demoRun) killLocked(w *demoWorker, delay time.Duration) {
	proc := w.proc
	w.killed = true
	r.kills++
	time.AfterFunc(delay, func() {
		now, _ := holdlog.Now()
		r.mu.Lock()
		w.killedAt = now
		r.mu.Unlock()
		proc.Signal(syscall.SIGKILL)
	})
}

// arm picks a random running worker to be killed inside its next critical
// section.
func (r *demoRun) armLocked() {
	var candidates []*demoWorker
	for _, w := range r.workers {
		if !w.killed && !w.armed && w.next < r.o.updates {
			candidates = append(candidates, w)
		}
	}
	if len(candidates) > 0 {
		w := candidates[r.rng.IntN(len(candidates))]
		w.armed = true
		if !r.o.anywhere {
			io.WriteString(w.stdin, "arm\n")
		}
	}
}

func (r *demoRun) killAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping = true
	for _, w := range r.workers {
		if w.proc != nil {
			w.killed = true
			w.proc.Signal(syscall.SIGKILL)
		}
	}
}

func chaosMode(o *demoOptions) string {
	switch {
	case !o.chaos:
		return "off"
	case o.anywhere:
		return fmt.Sprintf("on (a %s 0-3ms after a worker enters, every %d updates, then a restart)", demoKill, o.killEvery)
	}
	return fmt.Sprintf("on (a %s inside the critical section every %d updates, then a restart)", demoKill, o.killEvery)
}
