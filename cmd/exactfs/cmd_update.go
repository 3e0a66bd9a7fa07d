package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock"
)

func init() {
	register(&command{
		name:    "update",
		summary: "read-modify-write a state file through a command, under its lock, without lost updates",
		usage:   "update [--timeout DUR|none | --try] [--conflict-exit-code N] [--quiet] [--mkdir] [--allow-empty] STATEFILE -- CMD [ARG...]\n       exactfs update [flags] -c 'CMD' STATEFILE",
		help: `Under the lock of STATEFILE, run CMD with the current contents of STATEFILE on
its stdin (empty when STATEFILE does not exist). If CMD exits 0, its stdout
replaces STATEFILE atomically and durably (staged, fsynced, renamed into place,
directory fsynced), then the lock is released. The new file keeps the mode of
the one it replaces; a new state file is 0600. If CMD exits with any other
status, STATEFILE is left untouched, CMD's stdout is discarded, and exactfs
exits with CMD's status. CMD's stderr passes through.

If CMD exits 0 but prints nothing, STATEFILE is left untouched and exactfs
exits 65: an empty stdout is nearly always a command that wrote its result
elsewhere (jq -i, sed -i, a redirect) or printed nothing by mistake, and would
wipe the state. --allow-empty lets it replace STATEFILE with an empty file.

So concurrent updates from any number of shells, cron jobs and processes lose
nothing: each one sees the result of the previous one. A process killed at any
instant leaves STATEFILE with the old bytes or the new ones, never a torn file,
and a lock the next caller reclaims at once.

STATEFILE must be a regular file or absent: a symlink, FIFO, socket or device
there (or at STATEFILE.lock) is refused at once with exit 77 and left alone. So
is a STATEFILE with more than one name (a hard link), before CMD runs: the
replacement would reach only this name (exit 77, nothing changed).
Locking, signals, the flock-style flags, the directory rule (--mkdir) and
exit statuses are as for 'exactfs lock'.

Examples:
  echo '{"n":0}' | exactfs write --no-replace counter.json && exactfs update counter.json -- jq -c '.n += 1'
  exactfs update counter.txt -- awk '{ n = $1 } END { print n + 1 }'
  exactfs update config.json -- python3 edit_config.py --set debug=true
  exactfs update -c 'jq -c ".runs += 1"' state.json`,
		takesCmd: true,
		flags: func(fs *flagSet) any {
			f := &lockFlags{}
			f.register(fs, true)
			return f
		},
		run: runUpdate,
	})
}

// cmdFailed is fn's error when CMD exits non-zero: Update then leaves the
// state file untouched.
type cmdFailed struct{ status int }

func (c cmdFailed) Error() string { return fmt.Sprintf("the command exited with status %d", c.status) }

// emptyOutput is fn's error when CMD exited 0 but printed nothing, and
// --allow-empty was not given: Update then leaves the state file untouched.
type emptyOutput struct{ stateFile string }

func (e emptyOutput) Error() string {
	return fmt.Sprintf("the command exited 0 but printed nothing; %s was left untouched", e.stateFile)
}

func runUpdate(e *env, opts any, args []string) error {
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
	if err := refuseUnsafeStateFile(stateFile); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	relay := newSignalRelay(cancel)
	defer relay.stop()

	stopNotice := waitNotice(e, stateFile, f)
	ran := false
	fn := func(old []byte) ([]byte, error) {
		stopNotice()
		ran = true
		if err := withParent(stateFile, func(d *exactfs.Dir, name string) error {
			return refuseHardLink(d, name, "update", stateFile)
		}); err != nil {
			return nil, err
		}
		// Sized for a result as large as the state: a CMD that edits the
		// state prints about as much, and a buffer grown by doubling would
		// hold up to three times that at its peak (a 256 MiB state cost
		// 1.6 GB of memory).
		var out bytes.Buffer
		out.Grow(len(old) + 4096)
		c := &child{argv: argv, shell: f.shell != "", stdin: bytes.NewReader(old), stdout: &out, stderr: e.stderr}
		run, err := relay.startChild(e, c)
		if err != nil {
			return nil, err
		}
		if status := run.wait(); status != 0 {
			return nil, cmdFailed{status}
		}
		if out.Len() == 0 && !f.allowEmpty {
			return nil, emptyOutput{stateFile}
		}
		return out.Bytes(), nil
	}
	err = statelock.Update(ctx, stateFile, fn, f.options()...)
	stopNotice()
	if err == nil {
		noteRootOwned(e, "update", stateFile)
		return nil
	}
	var cf cmdFailed
	var st exitStatus
	switch {
	case !ran:
		if ierr := relay.interruptedWhileWaiting(e, commands["update"], stateFile); ierr != nil {
			return ierr
		}
		if lockFailed(err) == nil {
			// The lock was taken, and the state file refused before it
			// was read (statelock.Update: one its write could never
			// replace, another uid's planted in /tmp, say).
			err = fmt.Errorf("%w; CMD was not run", err)
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

// refuseUnsafeStateFile refuses, before the lock is taken, a STATEFILE that
// is there and is no regular file (a FIFO, a device, a symlink, a
// directory): Update would refuse it too, but only after it had created
// STATEFILE.lock and its owner file next to it, and "exactfs update
// /dev/sda -- ..." run as root then left them in /dev under a message that
// says nothing was changed. The check under the lock stays the one that
// counts (what is at STATEFILE may change in between); this one only spares
// the litter. The refusal is the library's own (IdentityOf, which opens
// nothing that is not a regular file), so its words and exit status are
// those of the refusal under the lock.
func refuseUnsafeStateFile(stateFile string) error {
	fi, err := exactfs.Lstat(stateFile)
	if err != nil || fi.Mode().IsRegular() {
		return nil // absent, or whatever it is, for the lock call to report
	}
	if _, err := exactfs.IdentityOf(stateFile); err != nil {
		return fmt.Errorf("%w; CMD was not run", err)
	}
	return nil
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
