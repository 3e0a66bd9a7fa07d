package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/liveness"
	"github.com/exactfs/exactfs/statelock"
)

// The demo's worker is this binary re-executed with a hidden subcommand, so
// that "go run ./cmd/exactfs demo" needs nothing else.
const demoWorkerCommand = "demo-worker"

type demoWorkerOptions struct {
	state   string
	holdLog string
	hostID  string
	worker  int
	from    int
	to      int
	wait    time.Duration
}

func init() {
	register(&command{
		name:    demoWorkerCommand,
		hidden:  true,
		local:   true,
		summary: "one worker of 'exactfs demo' (internal)",
		usage:   demoWorkerCommand + " --state F --hold-log L --host-id H --worker W --from K --to M",
		help:    "Apply updates K..M-1 of worker W to the demo's state file, reporting each step on stdout. Started by 'exactfs demo'.",
		flags: func(fs *flagSet) any {
			o := &demoWorkerOptions{}
			fs.StringVar(&o.state, "state", "", "state file")
			fs.StringVar(&o.holdLog, "hold-log", "", "hold-interval log (internal/holdlog format)")
			fs.StringVar(&o.hostID, "host-id", "", "host id to write in owner records")
			fs.IntVar(&o.worker, "worker", 0, "worker number")
			fs.IntVar(&o.from, "from", 0, "first update number")
			fs.IntVar(&o.to, "to", 0, "one past the last update number")
			fs.DurationVar(&o.wait, "wait", statelock.DefaultWait, "lock wait budget")
			return o
		},
		run: runDemoWorker,
	})
}

// demoState is the demo's state file: every update appends its id, "W.K".
type demoState struct {
	Updates int      `json:"updates"`
	Applied []string `json:"applied"`
}

func parseDemoState(b []byte) (demoState, error) {
	var st demoState
	if len(b) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("the state file does not parse: %w", err)
	}
	if st.Updates != len(st.Applied) {
		return st, fmt.Errorf("the state file says %d updates but lists %d", st.Updates, len(st.Applied))
	}
	return st, nil
}

// Worker events, one line each on stdout, written with a single write so a
// kill leaves whole lines only:
//
//	enter K MONO_NS ACQUIRE_NS   holding the lock, about to transform
//	paused K                     armed: holding the lock, waiting for SIGKILL
//	done K MONO_NS               transformed; Update now writes and releases
//	ack K new|dup                Update returned: durable and released
//	retry K REASON               the lock wait ran out; trying again
func runDemoWorker(e *env, opts any, args []string) error {
	o := opts.(*demoWorkerOptions)
	if o.state == "" || o.holdLog == "" || o.hostID == "" || len(args) != 0 {
		return usagef("--state, --hold-log and --host-id are required")
	}
	log, err := holdlog.Open(o.holdLog)
	if err != nil {
		return err
	}
	defer log.Close()
	w := &demoWorkerRun{
		o:     o,
		log:   log,
		armed: watchArm(),
		lockOpts: []statelock.Option{
			statelock.WithHostIdentity(liveness.FixedHostIdentity(o.hostID)),
			statelock.WithWait(o.wait),
		},
	}
	for k := o.from; k < o.to; k++ {
		if err := w.apply(k); err != nil {
			return err
		}
	}
	// The worker exits next: a lock it keeps between its Updates (sticky
	// ownership) is released first, or the run would end with the record
	// of a dead process in place of a tombstone.
	statelock.ReleaseKept()
	return nil
}

// demoWorkerRun is one incarnation of a demo worker.
type demoWorkerRun struct {
	o        *demoWorkerOptions
	log      *holdlog.Log
	armed    *atomic.Bool // set by watchArm: pause in the next critical section
	lockOpts []statelock.Option
}

// demoEmit writes one worker event line.
func demoEmit(format string, a ...any) {
	// One Write per line: the controller may SIGKILL us at any instant.
	os.Stdout.WriteString(fmt.Sprintf(format, a...) + "\n")
}

// watchArm reads the controller's commands on stdin. The controller arms us
// for a kill by writing "arm": the next critical section then
// pauses, holding the lock, until the SIGKILL arrives. Stdin closing means
// the controller is gone: stop.
func watchArm() *atomic.Bool {
	armed := new(atomic.Bool)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if sc.Text() == "arm" {
				armed.Store(true)
			}
		}
		os.Exit(3)
	}()
	return armed
}

// apply applies update k, trying again each time the lock wait runs out,
// and reports its acknowledgement.
func (w *demoWorkerRun) apply(k int) error {
	for {
		dup, err := w.attempt(k)
		if errors.Is(err, statelock.ErrLocked) {
			demoEmit("retry %d %s", k, "wait budget ran out")
			continue
		}
		if err != nil {
			return err
		}
		demoEmit("ack %d %s", k, map[bool]string{true: "dup", false: "new"}[dup])
		return nil
	}
}

// attempt is one statelock.Update for update k. dup reports that the state
// file already held the update's id (a killed predecessor wrote it).
func (w *demoWorkerRun) attempt(k int) (dup bool, err error) {
	id := strconv.Itoa(w.o.worker) + "." + strconv.Itoa(k)
	t0, err := holdlog.Now()
	if err != nil {
		return false, err
	}
	err = statelock.Update(context.Background(), w.o.state, func(old []byte) ([]byte, error) {
		next, d, err := w.critical(k, id, t0, old)
		dup = d
		return next, err
	}, w.lockOpts...)
	return dup, err
}

// critical is the critical section of update k, run holding the lock: it
// logs the hold interval (enter to exit), pauses for the kill when armed,
// and returns the state with id appended unless it is there already.
// t0 is when the attempt began waiting for the lock.
func (w *demoWorkerRun) critical(k int, id string, t0 int64, old []byte) (next []byte, dup bool, err error) {
	t1, _ := holdlog.Now()
	if err := w.log.Enter(); err != nil {
		return nil, false, err
	}
	demoEmit("enter %d %d %d", k, t1, t1-t0)
	if w.armed.Load() {
		demoEmit("paused %d", k)
		time.Sleep(10 * time.Second)
		return nil, false, errors.New("armed for a kill, but no SIGKILL came within 10s")
	}
	st, err := parseDemoState(old)
	if err != nil {
		return nil, false, err
	}
	st, dup = appendOnce(st, id)
	next, err = json.Marshal(st)
	if err != nil {
		return nil, false, err
	}
	if err := w.log.Exit(); err != nil {
		return nil, false, err
	}
	t2, _ := holdlog.Now()
	demoEmit("done %d %d", k, t2)
	return next, dup, nil
}

// appendOnce appends id to st unless st lists it already (dup). A restarted
// worker redoes the update its killed predecessor may have written but never
// saw acknowledged; the id makes that redo a no-op (exactly once).
func appendOnce(st demoState, id string) (_ demoState, dup bool) {
	if slices.Contains(st.Applied, id) {
		return st, true
	}
	st.Applied = append(st.Applied, id)
	st.Updates++
	return st, false
}
