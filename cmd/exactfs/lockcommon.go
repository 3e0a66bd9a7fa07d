package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/statelock"
)

// lockFlags are the flags every command that takes a state-file lock shares.
type lockFlags struct {
	timeout      durationFlag
	try          bool
	conflictExit int
	configRoot   string
	hostLocal    bool
	mkdir        bool
	quiet        bool
	shell        string // -c: run this through the shell (shellArgv) instead of CMD [ARG...]
	shared       bool   // refused: the protocol has no shared mode
	allowEmpty   bool   // update only: an empty stdout of CMD may replace STATEFILE
}

func (f *lockFlags) register(fs *flagSet, update bool) {
	f.timeout = durationFlag{d: statelock.DefaultWait}
	fs.Var(&f.timeout, "timeout", "wait at most `DUR` for the lock (5s, 1m, 2.5); 0 means one attempt, none waits\nas long as it takes (flock's default)")
	fs.Var(&f.timeout, "w", "")
	fs.BoolVar(&f.try, "try", false, "make one attempt; if the lock is held, exit 75 at once (not with --timeout)")
	fs.BoolVar(&f.try, "n", false, "")
	fs.IntVar(&f.conflictExit, "conflict-exit-code", exitBusy, "exit with `N` instead of 75 when the lock is busy; with 0, a busy lock is\nnot an error and nothing is printed")
	fs.IntVar(&f.conflictExit, "E", exitBusy, "")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing when the lock is busy or the wait times out (other errors are\nstill reported)")
	fs.BoolVar(&f.quiet, "q", false, "")
	fs.StringVar(&f.shell, "command", "", "run `CMD` with /bin/sh -c (Windows: %ComSpec% /d /s /c) instead of taking CMD [ARG...] after STATEFILE")
	fs.StringVar(&f.shell, "c", "", "")
	fs.BoolVar(&f.mkdir, "mkdir", false, "create STATEFILE's directory (0700) if it is missing; without it a missing\ndirectory is an error, so that a typo cannot give a lock nobody else takes")
	fs.BoolVar(new(bool), "exclusive", false, "the only mode there is; accepted for flock's -x")
	fs.BoolVar(new(bool), "x", false, "")
	fs.BoolVar(&f.shared, "shared", false, "not available: the lock has exactly one holder, and readers need no lock")
	fs.BoolVar(&f.shared, "s", false, "")
	if update {
		fs.BoolVar(&f.allowEmpty, "allow-empty", false, "let an empty stdout of CMD replace STATEFILE with an empty file (without it,\nan empty stdout is refused and STATEFILE is left untouched)")
	}
	registerIdentityFlags(fs, &f.configRoot, &f.hostLocal)
}

// flagAliases are the short, flock-style spellings of long flags. Help, the
// man page and the completions show them beside the long name.
var flagAliases = map[string]string{"w": "timeout", "n": "try", "E": "conflict-exit-code", "q": "quiet", "c": "command", "s": "shared", "x": "exclusive"}

func registerIdentityFlags(fs *flagSet, configRoot *string, hostLocal *bool) {
	fs.StringVar(configRoot, "config-root", "", "`DIR` holding machine-identity.secret, the source of this host's id in owner\nrecords (default: $XDG_CONFIG_HOME/exactfs); peers sharing a lock must agree")
	fs.BoolVar(hostLocal, "host-local", false, "the state file's directory is never shared with another host, so an owner\nrecord without a host id may be judged by its pid")
}

// options turns the flags into statelock options.
func (f *lockFlags) options() []statelock.Option {
	opts := identityOptions(f.configRoot, f.hostLocal)
	wait := f.timeout.d
	switch {
	case f.try:
		wait = 0
	case f.timeout.forever:
		wait = statelock.WaitForever
	}
	if f.mkdir {
		opts = append(opts, statelock.WithMakeDir(true))
	}
	if f.allowEmpty {
		opts = append(opts, statelock.WithAllowEmpty(true))
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
	if f.try && f.timeout.set {
		return usagef("--try makes one attempt and --timeout %s waits: give one of them", f.timeout.String())
	}
	if f.shared {
		return usagef("--shared is not available: a state-file lock has exactly one holder (one owner\n" +
			"record, the protocol TypeScript peers share), so there is no shared mode to take. A reader does\n" +
			"not need one: every write replaces STATEFILE atomically, so a plain read sees the old bytes or\n" +
			"the new ones, whole")
	}
	return nil
}

// silentOnConflict says whether a busy lock ends the command without a
// message: asked for with --quiet, or implied by --conflict-exit-code 0,
// which declares a busy lock a success (a cron job that skips a run).
func (f *lockFlags) silentOnConflict() bool { return f.quiet || f.conflictExit == 0 }

// durationFlag is a wait budget: a Go duration ("5s", "1m30s"), a number
// of seconds ("2.5"), as flock -w takes, or "none" for no limit.
type durationFlag struct {
	d       time.Duration
	forever bool
	set     bool // given on the command line
}

func (f *durationFlag) String() string {
	switch {
	case f == nil:
		return ""
	case f.forever:
		return "none"
	}
	return f.d.String()
}

func (f *durationFlag) Set(s string) error {
	f.set = true
	switch strings.ToLower(s) {
	case "none", "inf", "+inf", "infinity", "+infinity":
		// "inf" is what many try first for "wait forever"; ParseFloat
		// accepts it, and its conversion to a Duration overflowed into a
		// negative wait, which meant one attempt.
		f.forever, f.d = true, 0
		return nil
	}
	f.forever = false
	if secs, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case math.IsNaN(secs):
			return fmt.Errorf("%q is not a number of seconds; give a duration such as 5s, 1m or 2.5, or none", s)
		case secs < 0:
			return errors.New("a negative wait makes no sense")
		case secs > maxWaitSeconds:
			return fmt.Errorf("%s seconds is more than a wait can be (about 292 years); none waits as long as it takes", s)
		}
		f.d = time.Duration(secs * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 5s, 1m or 2.5 (at most about 292 years), or none, got %q", s)
	}
	f.d = d
	return nil
}

// maxWaitSeconds is the longest wait a number of seconds may give: a
// time.Duration holds at most about 292 years, and a larger float would
// overflow the conversion into a negative wait.
const maxWaitSeconds = float64(math.MaxInt64) / float64(time.Second)

// splitCommand takes "STATEFILE [--] CMD [ARG...]" apart, or, with -c,
// "STATEFILE" alone.
func (f *lockFlags) splitCommand(args []string) (stateFile string, argv []string, err error) {
	if len(args) == 0 {
		return "", nil, usagef("missing STATEFILE")
	}
	if f.shell != "" {
		if len(args) > 1 && !(len(args) == 2 && args[1] == "--") {
			return "", nil, usagef("-c gives the command; nothing may follow STATEFILE, got %q", args[1:])
		}
		if args[0] == "" {
			return "", nil, usagef("STATEFILE is empty")
		}
		argv, err := shellArgv(f.shell)
		if err != nil {
			return "", nil, err
		}
		return args[0], argv, nil
	}
	stateFile, argv = args[0], args[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return "", nil, usagef("missing CMD after STATEFILE (write: STATEFILE -- CMD [ARG...], or -c 'CMD' STATEFILE)")
	}
	if stateFile == "" {
		return "", nil, usagef("STATEFILE is empty")
	}
	return stateFile, argv, nil
}

// waitNotice prints, on a terminal, who holds the lock while a lock call has
// waited more than a second, refreshing once a second. stop ends it and
// clears the line; it is safe to call more than once.
func waitNotice(e *env, stateFile string, f *lockFlags) (stop func()) {
	if !e.stderrTTY || f.quiet {
		return func() {}
	}
	opts := identityOptions(f.configRoot, f.hostLocal)
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
	argv []string
	// shell: argv is shellArgv's, the interpreter and a -c string. On
	// Windows the string then goes to cmd.exe verbatim (shell_windows.go).
	shell  bool
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	env    []string
}

// running is a started command: on unix its guard (guard.go), which
// exits with the command's status once nothing of its tree is left.
type running struct {
	cmd    *exec.Cmd
	signal func(os.Signal) // forwards a signal exactfs received to the command
	after  func()          // run once the process has been waited for
}

// wait waits for the command and returns its status, with the shell's 128+n
// for a command killed by signal n.
func (r *running) wait() int {
	err := r.cmd.Wait()
	if r.after != nil {
		r.after()
	}
	return childStatus(r.cmd, err)
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
// lock can carry as a fencing token. The path is absolute: CMD may change
// its directory before it looks. It is also resolved (exactfs.SystemPath):
// it is for programs, not people, and the resolved spelling is the one
// path of the record however STATEFILE was spelled (/var/lock/x or
// /run/lock/x on Debian, /var/… or /private/var/… on macOS), which a
// program can compare, and open with a walk that follows no symlink at all.
func lockEnv(h *statelock.Held) []string {
	p := h.LockPath()
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	p = exactfs.SystemPath(p)
	return []string{"EXACTFS_LOCK_PATH=" + p, "EXACTFS_LOCK_TOKEN=" + h.Token()}
}

// lockFailure gives a busy failure the caller's exit status, silently when
// the caller asked for that.
func lockFailure(err error, f *lockFlags) error {
	if f.silentOnConflict() && exitCode(err) == exitBusy {
		if lockFailed(err) != nil {
			return exitStatus(f.conflictExit)
		}
	}
	return withConflictStatus(err, f.conflictExit)
}

// missingDirError is a state file whose directory does not exist. Lock
// calls are refused then, unless --mkdir says the directory is meant to be
// made: a mistyped path would otherwise give a lock nobody else takes.
type missingDirError struct {
	dir string
	err error
}

func (m missingDirError) Error() string {
	return fmt.Sprintf("the directory %s does not exist; nothing was created", m.dir)
}
func (m missingDirError) Unwrap() error { return m.err }

// prepareStateFile is what a lock command does with STATEFILE before the
// library sees it: a missing directory is refused unless mkdir is set. The
// path is passed on as given: the library walks a trusted system symlink
// at its start itself (exactfs.SystemPath), and every message of lock and
// update then names the path as the user spelled it (syslinks.go).
func prepareStateFile(stateFile string, mkdir bool) (string, error) {
	return stateFile, checkStateDir(stateFile, mkdir)
}

// checkStateDir refuses a state file whose directory is missing, unless
// mkdir is set (the library then creates it, owner-only; run as root, each
// directory it makes goes to the owner of the directory it is made in:
// exactfs.MkdirAllForParentOwner, through statelock.WithMakeDir).
func checkStateDir(stateFile string, mkdir bool) error {
	if mkdir {
		return nil
	}
	d, _, err := openParent(stateFile)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			dir := filepath.Dir(filepath.Clean(stateFile))
			return missingDirError{dir: dir, err: err}
		}
		return nil // the lock call reports it, with its own words
	}
	if d != nil {
		d.Close()
	}
	return nil
}
