package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

type demoOptions struct {
	workers   int
	updates   int
	chaos     bool
	dir       string
	killEvery int
	anywhere  bool
	keep      bool
	seed      uint64
}

func init() {
	register(&command{
		name:    "demo",
		local:   true,
		summary: "watch N processes update one state file while a chaos loop SIGKILLs them: nothing is lost",
		usage:   "demo [--workers N] [--updates M] [--chaos=false] [--dir DIR]",
		help: `Start N worker processes (this binary, re-executed) that each apply M
statelock.Update calls to one JSON state file in a fresh temporary directory.
Each update appends a unique id ("worker.update") to the file. Meanwhile a
chaos loop picks a random worker, waits until it has entered its critical
section (it holds the lock and is about to transform the state), and kills it
with SIGKILL, at a random instant inside the critical section or during the
durable write that follows; then it restarts the worker to finish its
remaining updates. A restarted worker redoes the update it never saw
acknowledged; the id makes that redo a no-op if its predecessor had already
written it.

Every worker records when it enters and leaves its critical section with
CLOCK_MONOTONIC (internal/holdlog format), and the demo checks afterwards:

  lost updates          acknowledged ids missing from the state file      must be 0
  duplicated updates    ids present more than once                        must be 0
  overlapping holds     two workers inside at the same instant            must be 0
  found = expected      the state file holds exactly N*M ids, and parses
  reclaims              a lock left by a killed holder was taken over by
                        the next worker at once (its owner provably dead),
                        not after the 5 s wait budget

and prints p50/p99 time to acquire the lock and the throughput. The exit
status is 0 when every invariant holds, 1 otherwise. On a terminal a live line
shows progress.

The hold interval a worker records runs from the moment Update hands it the
current contents to the moment it returns the new ones; the durable write and
the release that follow are covered by the lost/duplicate check (a second
holder there would read stale contents and lose an update).

On Windows (which needs EXACTFS_WINDOWS=unverified: see README.md, "Windows")
a kill is TerminateProcess and the clock is QueryPerformanceCounter. Under
Wine a process takes up to a second to start and an update a few hundred
milliseconds, so use a few workers and updates there (the CI's Wine lane runs
--workers 3 --updates 8 --chaos=false, then --workers 3 --updates 10
--kill-every 4).

Examples:
  exactfs demo
  exactfs demo --workers 4 --updates 50 --chaos=false
  exactfs demo --dir /mnt/shared   # try it on another filesystem`,
		flags: func(fs *flagSet) any {
			o := &demoOptions{}
			fs.IntVar(&o.workers, "workers", 8, "number of worker processes (`N`)")
			fs.IntVar(&o.updates, "updates", 200, "updates per worker (`M`)")
			fs.BoolVar(&o.chaos, "chaos", true, "SIGKILL workers inside their critical section and restart them\n(TerminateProcess on Windows)")
			fs.StringVar(&o.dir, "dir", "", "create the demo's directory under `DIR` (kept afterwards) instead of the system temp dir")
			fs.IntVar(&o.killEvery, "kill-every", 25, "with --chaos, kill one worker every `K` acknowledged updates")
			fs.BoolVar(&o.anywhere, "kill-anywhere", false, "with --chaos, kill 0-3ms after a worker enters, wherever that lands\n(the transform, the durable write, or the release of the lock)")
			fs.BoolVar(&o.keep, "keep", false, "keep the demo's directory afterwards")
			fs.Uint64Var(&o.seed, "seed", 0, "random seed for the chaos loop (0: random)")
			return o
		},
		run: runDemo,
	})
}

func runDemo(e *env, opts any, args []string) error {
	o := opts.(*demoOptions)
	if len(args) != 0 {
		return usagef("demo takes no arguments")
	}
	if o.workers < 1 || o.workers > 256 || o.updates < 1 || o.updates > 100000 {
		return usagef("--workers must be 1..256 and --updates 1..100000")
	}
	if o.killEvery <= 0 {
		return usagef("--kill-every must be positive")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find this program to start workers: %w", err)
	}
	parent := o.dir
	if parent == "" {
		parent = os.TempDir()
	} else {
		o.keep = true
	}
	// The demo's directory lives under a directory reached without symlinks,
	// but for the system's own (macOS puts the temp dir under /var); it is
	// shown as given (/var/folders/…, not /private/var/folders/…).
	given := parent
	parent = exactfs.SystemPath(parent)
	pd, err := exactfs.OpenDir(parent)
	if err != nil {
		return err
	}
	pd.Close()
	dir, err := os.MkdirTemp(parent, "exactfs-demo-")
	if err != nil {
		return err
	}
	failed := false
	defer func() {
		if !o.keep && !failed {
			os.RemoveAll(dir)
		}
	}()
	seed := o.seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	r := &demoRun{
		o: o, e: e, dir: dir, self: self,
		state:        filepath.Join(dir, "state.json"),
		rng:          rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		expected:     o.workers * o.updates,
		acked:        map[string]int{},
		workerExited: make(chan struct{}, o.workers*4),
	}
	// The workers share one host identity, derived in the demo's own
	// config root so that the demo writes nothing outside its directory.
	host, err := liveness.LoadHostIdentity(filepath.Join(dir, "config"))
	if err != nil {
		host = liveness.FixedHostIdentity(strings.ReplaceAll(exactfs.NewUUID(), "-", ""))
		// The first clause says what is missing; the remedy that follows
		// (how to fix a config root) is not the demo's, whose directory is
		// temporary. Under Wine this is every run: no DACL is kept there.
		why, _, _ := strings.Cut(err.Error(), "; ")
		fmt.Fprintf(e.stderr, "note: no host identity (%s); the demo uses a random host id\n", why)
	}
	r.hostID = host.ID

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Fprintf(e.stdout, "exactfs demo: %d workers × %d updates on %s, chaos %s\n",
		o.workers, o.updates, exactfs.AsGiven(given, r.state), chaosMode(o))
	r.start = time.Now()
	r.lastProgress = r.start
	err = r.run(ctx)
	elapsed := time.Since(r.start)
	// Keep the files of a run that went wrong, for 'exactfs status'; an
	// interrupted run has nothing to show.
	var interrupted exitStatus
	failed = err != nil && !errors.As(err, &interrupted)
	if e.stderrTTY {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if err != nil {
		return err
	}
	ok := r.report(elapsed)
	failed = !ok
	if o.keep || !ok {
		fmt.Fprintf(e.stdout, "\nThe demo's files are kept in %s\n", exactfs.AsGiven(given, dir))
	}
	if !ok {
		return exitStatus(1)
	}
	return nil
}
