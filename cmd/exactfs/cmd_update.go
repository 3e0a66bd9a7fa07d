package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/exactfs/exactfs/statelock"
)

func init() {
	register(&command{
		name:    "update",
		summary: "read-modify-write a state file through a command, under its lock, without lost updates",
		usage:   "update [--timeout DUR | --try] [--conflict-exit-code N] STATEFILE -- CMD [ARG...]",
		help: `Under the lock of STATEFILE, run CMD with the current contents of STATEFILE on
its stdin (empty when STATEFILE does not exist). If CMD exits 0, its stdout
replaces STATEFILE atomically and durably (staged, fsynced, renamed into place,
directory fsynced; mode 0600), then the lock is released. If CMD exits with
any other status, STATEFILE is left untouched, CMD's stdout is discarded, and
exactfs exits with CMD's status. CMD's stderr passes through.

So concurrent updates from any number of shells, cron jobs and processes lose
nothing: each one sees the result of the previous one. A process killed at any
instant leaves STATEFILE with the old bytes or the new ones, never a torn file,
and a lock the next caller reclaims at once.

STATEFILE must be a regular file or absent: a symlink, FIFO, socket or device
there (or at STATEFILE.lock) is refused at once with exit 77 and left alone.
Locking, signals and exit statuses are as for 'exactfs lock'.

Examples:
  echo '{"n":0}' | exactfs write --no-replace counter.json && exactfs update counter.json -- jq -c '.n += 1'
  exactfs update counter.txt -- awk '{ n = $1 } END { print n + 1 }'
  exactfs update config.json -- python3 edit_config.py --set debug=true`,
		flags: func(fs *flagSet) any {
			f := &lockFlags{}
			f.register(fs)
			return f
		},
		run: runUpdate,
	})
}

// cmdFailed is fn's error when CMD exits non-zero: Update then leaves the
// state file untouched.
type cmdFailed struct{ status int }

func (c cmdFailed) Error() string { return fmt.Sprintf("the command exited with status %d", c.status) }

func runUpdate(e *env, opts any, args []string) error {
	f := opts.(*lockFlags)
	if err := f.check(); err != nil {
		return err
	}
	stateFile, argv, err := splitCommand(args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	relay := newSignalRelay(cancel)
	defer relay.stop()

	stopNotice := waitNotice(e, stateFile, identityOptions(f.configRoot, f.hostLocal))
	ran := false
	fn := func(old []byte) ([]byte, error) {
		stopNotice()
		ran = true
		var out bytes.Buffer
		c := &child{argv: argv, stdin: bytes.NewReader(old), stdout: &out, stderr: e.stderr}
		cmd, err := relay.startChild(e, c)
		if err != nil {
			return nil, err
		}
		if status := childStatus(cmd, cmd.Wait()); status != 0 {
			return nil, cmdFailed{status}
		}
		return out.Bytes(), nil
	}
	err = statelock.Update(ctx, stateFile, fn, f.options()...)
	stopNotice()
	if err == nil {
		return nil
	}
	var cf cmdFailed
	var st exitStatus
	switch {
	case !ran:
		if ierr := relay.interruptedWhileWaiting(e, commands["update"], stateFile); ierr != nil {
			return ierr
		}
		return lockFailure(err, f)
	case errors.As(err, &cf):
		if rest := withoutCmdFailure(err); rest != nil {
			fmt.Fprintf(e.stderr, "exactfs update: %v\n", rest)
		}
		return exitStatus(cf.status)
	case errors.As(err, &st):
		return st
	}
	return err
}

// withoutCmdFailure returns the errors joined with a command failure (a
// failed release), or nil when there are none.
func withoutCmdFailure(err error) error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil
	}
	var rest []error
	for _, e := range j.Unwrap() {
		var cf cmdFailed
		if !errors.As(e, &cf) {
			rest = append(rest, e)
		}
	}
	return errors.Join(rest...)
}
