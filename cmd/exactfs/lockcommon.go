package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/exactfs/exactfs/statelock"
)

// lockFlags are the flags every command that takes a state-file lock shares.
type lockFlags struct {
	timeout      durationFlag
	try          bool
	conflictExit int
	configRoot   string
	hostLocal    bool
}

func (f *lockFlags) register(fs *flagSet) {
	f.timeout = durationFlag{d: statelock.DefaultWait}
	fs.Var(&f.timeout, "timeout", "wait at most `DUR` for the lock (5s, 1m, 2.5); 0 means one attempt")
	fs.BoolVar(&f.try, "try", false, "make one attempt; if the lock is held, exit 75 at once")
	fs.IntVar(&f.conflictExit, "conflict-exit-code", exitBusy, "exit with `N` instead of 75 when the lock is busy")
	registerIdentityFlags(fs, &f.configRoot, &f.hostLocal)
}

func registerIdentityFlags(fs *flagSet, configRoot *string, hostLocal *bool) {
	fs.StringVar(configRoot, "config-root", "", "`DIR` holding machine-identity.secret, the source of this host's id in owner\nrecords (default: $XDG_CONFIG_HOME/exactfs); peers sharing a lock must agree")
	fs.BoolVar(hostLocal, "host-local", false, "the state file's directory is never shared with another host, so an owner\nrecord without a host id may be judged by its pid")
}

// options turns the flags into statelock options.
func (f *lockFlags) options() []statelock.Option {
	opts := identityOptions(f.configRoot, f.hostLocal)
	wait := f.timeout.d
	if f.try {
		wait = 0
	}
	return append(opts, statelock.WithWait(wait))
}

func identityOptions(configRoot string, hostLocal bool) []statelock.Option {
	var opts []statelock.Option
	if configRoot != "" {
		opts = append(opts, statelock.WithConfigRoot(configRoot))
	}
	if hostLocal {
		opts = append(opts, statelock.WithHostLocal(true))
	}
	return opts
}

func (f *lockFlags) check() error {
	if f.conflictExit < 0 || f.conflictExit > 255 {
		return usagef("--conflict-exit-code must be between 0 and 255, got %d", f.conflictExit)
	}
	return nil
}

// durationFlag is a wait budget: a Go duration ("5s", "1m30s") or a number
// of seconds ("2.5"), as flock -w takes.
type durationFlag struct{ d time.Duration }

func (f *durationFlag) String() string {
	if f == nil {
		return ""
	}
	return f.d.String()
}

func (f *durationFlag) Set(s string) error {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if secs < 0 {
			return errors.New("a negative wait makes no sense")
		}
		f.d = time.Duration(secs * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 5s, 1m or 2.5, got %q", s)
	}
	f.d = d
	return nil
}

// splitCommand takes "STATEFILE [--] CMD [ARG...]" apart.
func splitCommand(args []string) (stateFile string, argv []string, err error) {
	if len(args) == 0 {
		return "", nil, usagef("missing STATEFILE")
	}
	stateFile, argv = args[0], args[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return "", nil, usagef("missing CMD after STATEFILE (write: STATEFILE -- CMD [ARG...])")
	}
	if stateFile == "" {
		return "", nil, usagef("STATEFILE is empty")
	}
	return stateFile, argv, nil
}

// waitNotice prints, on a terminal, who holds the lock while a lock call has
// waited more than a second, refreshing once a second. stop ends it and
// clears the line; it is safe to call more than once.
func waitNotice(e *env, stateFile string, opts []statelock.Option) (stop func()) {
	if !e.stderrTTY {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		start := time.Now()
		t := time.NewTimer(time.Second)
		defer t.Stop()
		lockName := filepath.Base(stateFile) + ".lock"
		printed := false
		for {
			select {
			case <-done:
				if printed {
					fmt.Fprint(e.stderr, "\r\033[K")
				}
				return
			case <-t.C:
			}
			msg := fmt.Sprintf("waiting for %s (%s so far)", lockName, roundAge(time.Since(start)))
			if h := waitingFor(stateFile, opts); h != "" {
				msg = fmt.Sprintf("waiting for %s, held by %s", lockName, h)
			}
			fmt.Fprintf(e.stderr, "\r\033[K%s", msg)
			printed = true
			t.Reset(time.Second)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done); <-finished })
	}
}

// child is the command run under the lock.
type child struct {
	argv   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	env    []string
}

// start starts the command. A command that cannot be started is reported
// with the shell's statuses: 127 not found, 126 not executable.
func (c *child) start(e *env) (*exec.Cmd, error) {
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	cmd.Env = append(os.Environ(), c.env...)
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		status := exitCannotExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			status = exitNotFound
		}
		fmt.Fprintf(e.stderr, "exactfs: cannot run %s: %v\n", c.argv[0], err)
		return nil, exitStatus(status)
	}
	return cmd, nil
}

// childStatus is the exit status of a finished command, with the shell's
// 128+n for a command killed by signal n.
func childStatus(cmd *exec.Cmd, waitErr error) int {
	if cmd.ProcessState == nil {
		return exitIO
	}
	if n, ok := signaledWith(cmd.ProcessState); ok {
		return 128 + n
	}
	return cmd.ProcessState.ExitCode()
}

// lockEnv is what the command learns about the lock it runs under: the owner
// record's path and the acquisition's token, which state written under the
// lock can carry as a fencing token.
func lockEnv(h *statelock.Held) []string {
	return []string{"EXACTFS_LOCK_PATH=" + h.LockPath(), "EXACTFS_LOCK_TOKEN=" + h.Token()}
}

// lockFailure gives a busy failure the caller's exit status.
func lockFailure(err error, f *lockFlags) error {
	return withConflictStatus(err, f.conflictExit)
}
