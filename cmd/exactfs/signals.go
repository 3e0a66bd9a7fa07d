package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"

	"github.com/exactfs/exactfs/internal/jobctl"
)

// signalRelay handles the signals that ask exactfs to stop while it holds,
// or waits for, a lock. While it waits, a signal cancels the wait. While the
// command runs, the signal is forwarded to the command, and exactfs waits for
// it to finish and then releases the lock: the lock is never abandoned by a
// catchable signal.
type signalRelay struct {
	ch     chan os.Signal
	done   chan struct{}
	cancel context.CancelFunc
	got    atomic.Int32 // the first signal received, as a number; 0 for none

	mu  sync.Mutex
	run *running
}

func newSignalRelay(cancel context.CancelFunc) *signalRelay {
	r := &signalRelay{ch: make(chan os.Signal, 4), done: make(chan struct{}), cancel: cancel}
	signal.Notify(r.ch, relayedSignals...)
	go r.loop()
	return r
}

func (r *signalRelay) loop() {
	for {
		select {
		case s := <-r.ch:
			r.handle(s)
		case <-r.done:
			return
		}
	}
}

func (r *signalRelay) handle(s os.Signal) {
	r.got.CompareAndSwap(0, int32(signalNumber(s)))
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.run == nil {
		r.cancel()
		return
	}
	if jobctl.FromTerminal(s) {
		// The command is in our foreground process group and got the
		// keyboard's signal itself; a second copy could make it abort
		// the graceful shutdown the first one started.
		return
	}
	r.run.signal(s)
}

// received returns the number of the first signal received, or 0.
func (r *signalRelay) received() int { return int(r.got.Load()) }

// startChild starts the command unless a signal already arrived, and from
// then on forwards signals to it. There is no instant at which a signal can
// fall between the check and the forwarding.
func (r *signalRelay) startChild(e *env, c *child) (*running, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.received(); n != 0 {
		return nil, exitStatus(128 + n)
	}
	run, err := c.start(e)
	if err != nil {
		return nil, err
	}
	r.run = run
	return run, nil
}

func (r *signalRelay) stop() {
	signal.Stop(r.ch)
	close(r.done)
}

// interruptedWhileWaiting reports a lock wait cut short by a signal.
func (r *signalRelay) interruptedWhileWaiting(e *env, c *command, stateFile string) error {
	n := r.received()
	if n == 0 {
		return nil
	}
	fmt.Fprintf(e.stderr, "exactfs %s: interrupted (signal %d) while waiting for %s.lock; the command was not run\n", c.name, n, stateFile)
	return exitStatus(128 + n)
}
