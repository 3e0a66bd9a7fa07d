package main

import (
	"context"
	"fmt"

	"github.com/exactfs/exactfs/statelock"
)

func init() {
	register(&command{
		name:    "lock",
		summary: "run a command while holding the lock of a state file",
		usage:   "lock [--timeout DUR|none | --try] [--conflict-exit-code N] [--quiet] [--mkdir] STATEFILE -- CMD [ARG...]\n       exactfs lock [flags] -c 'CMD' STATEFILE",
		help: `Take the lock of STATEFILE (the owner record STATEFILE.lock, shared with every
exactfs and TypeScript peer that uses the same protocol), run CMD, release the
lock, and exit with CMD's status.

The lock is released however CMD ends. SIGINT, SIGTERM and SIGHUP sent to
exactfs are forwarded to CMD (a ^C from the terminal reaches CMD directly and is
not sent twice), and exactfs releases the lock once CMD has exited. Processes
CMD leaves running get SIGTERM, then SIGKILL a second later, and the lock is
released once they are gone. CMD runs under a guard (exactfs re-executed) that
outlives exactfs: if exactfs is killed with SIGKILL, the guard kills CMD and
every process below it (on Linux whatever session it moved to; elsewhere CMD's
process group), and the next caller reclaims the dead holder's lock at once.

A holder that is provably dead (its process is gone, its pid was reused) is
reclaimed without waiting. A live holder, or one whose death cannot be proved
(another host, another pid namespace), is waited for; after --timeout the
command exits 75 and says who holds the lock. On a terminal, after a second of
waiting, a line says who holds it. A symlink, FIFO, socket or device at
STATEFILE.lock is refused at once (exit 77) and left alone.

STATEFILE's directory must exist (a mistyped path would otherwise give a lock
nobody else takes); --mkdir creates it, owner-only (run as root in another
user's directory, what it makes is that user's, as the lock's records are). A
path through one of the system's own symlinks (/var/lock, /var/run; on macOS /tmp, /var, /etc) is
resolved when every part of that symlink and its target is owned by root and
writable by no one else; any other symlink on the path is refused (exit 77).

CMD runs with EXACTFS_LOCK_PATH (the owner record, as an absolute path) and
EXACTFS_LOCK_TOKEN (the random token of this acquisition, as in the owner
record: it tells this acquisition from any other, but is not ordered) in its
environment.

Flags go before STATEFILE: what follows it is CMD, so a flag there (lock
s.json -w 1 -- true) is refused with exit 64 before anything is locked or
run. A CMD that starts with a dash goes after --.

Coming from flock(1): -n is --try, -w is --timeout, -E is --conflict-exit-code,
-c runs a shell command, -q is --quiet, and -x is accepted (the only mode). The
default wait is 5s, not forever: --timeout none waits as long as it takes.
There is no shared mode (-s): the lock has exactly one holder, and readers need
none, because every write replaces STATEFILE atomically.

Examples:
  exactfs lock /var/lib/app/state.json -- ./migrate.sh
  exactfs lock --try state.json -- make deploy || echo "someone else is deploying"
  exactfs lock -n -E 0 state.json -- ./cron-job.sh     # skip this run, silently, if one is running
  exactfs lock --timeout none -c 'make && make install' build.state`,
		takesCmd: true,
		flags: func(fs *flagSet) any {
			f := &lockFlags{}
			f.register(fs, false)
			return f
		},
		run: runLock,
	})
}

func runLock(e *env, opts any, args []string) error {
	f := opts.(*lockFlags)
	if err := f.check(); err != nil {
		return err
	}
	stateFile, argv, err := f.splitCommand(args)
	if err != nil {
		return err
	}
	if stateFile, err = prepareStateFile(stateFile, f.mkdir); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	relay := newSignalRelay(cancel)
	defer relay.stop()

	stopNotice := waitNotice(e, stateFile, f)
	held, err := acquire(ctx, stateFile, f)
	stopNotice()
	if err != nil {
		if ierr := relay.interruptedWhileWaiting(e, commands["lock"], stateFile); ierr != nil {
			return ierr
		}
		return lockFailure(err, f)
	}

	c := &child{argv: argv, shell: f.shell != "", stdin: e.stdin, stdout: e.stdout, stderr: e.stderr, env: lockEnv(held)}
	run, err := relay.startChild(e, c)
	status := 0
	if err == nil {
		status = run.wait()
	}
	if uerr := held.Unlock(); uerr != nil {
		fmt.Fprintf(e.stderr, "exactfs lock: releasing %s failed: %v\n", held.LockPath(), uerr)
		if err == nil && status == 0 {
			return fmt.Errorf("the command succeeded, but the lock could not be released: %w", uerr)
		}
	}
	if err != nil {
		return err
	}
	return exitStatus(status)
}

// acquire takes the lock, once (--try, --timeout 0) or waiting.
func acquire(ctx context.Context, stateFile string, f *lockFlags) (*statelock.Held, error) {
	if f.try || (f.timeout.d == 0 && !f.timeout.forever) {
		return statelock.TryLock(stateFile, f.options()...)
	}
	return statelock.Lock(ctx, stateFile, f.options()...)
}
