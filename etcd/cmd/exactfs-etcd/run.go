package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/exactfs/exactfs/etcd"
	"github.com/exactfs/exactfs/internal/jobctl"
	"github.com/exactfs/exactfs/locker"
)

// lockFlags are the flags of lock and update: the file backend's
// (cmd/exactfs), spelled the same, short flock-style aliases included, so
// that the exactfs command can hand an etcd URL over with its flags.
type lockFlags struct {
	clusterFlags
	timeout      durationFlag
	try          bool
	conflictExit int
	quiet        bool
	shell        string // -c: run this through /bin/sh -c
	shared       bool   // refused: the lock has one holder
	allowEmpty   bool   // update only
	lockDelay    durationFlag
}

// defaultLockDelay is lock's --lock-delay.
const defaultLockDelay = 2 * time.Second

func (f *lockFlags) register(fs *flag.FlagSet, update bool) {
	f.clusterFlags.register(fs)
	f.timeout = durationFlag{d: etcd.DefaultWait, allowNone: true}
	fs.Var(&f.timeout, "timeout", "wait at most `DUR` for the lock (5s, 1m, 2.5), reaching the cluster included;\n0 means one attempt, none waits as long as it takes")
	fs.Var(&f.timeout, "w", "short for --timeout")
	fs.BoolVar(&f.try, "try", false, "make one attempt; if the lock is held, exit 75 at once (not with --timeout)")
	fs.BoolVar(&f.try, "n", false, "short for --try")
	fs.IntVar(&f.conflictExit, "conflict-exit-code", exitBusy, "exit with `N` instead of 75 when the lock is busy; with 0, a busy lock is\nnot an error and nothing is printed")
	fs.IntVar(&f.conflictExit, "E", exitBusy, "short for --conflict-exit-code")
	fs.BoolVar(&f.quiet, "quiet", false, "print nothing when the lock is busy or the wait times out (other errors are\nstill reported)")
	fs.BoolVar(&f.quiet, "q", false, "short for --quiet")
	fs.StringVar(&f.shell, "command", "", "run `CMD` with /bin/sh -c instead of taking CMD [ARG...] after the URL")
	fs.StringVar(&f.shell, "c", "", "short for --command")
	fs.BoolVar(new(bool), "exclusive", false, "the only mode there is; accepted for flock's -x")
	fs.BoolVar(new(bool), "x", false, "short for --exclusive")
	fs.BoolVar(&f.shared, "shared", false, "not available: the lock has exactly one holder")
	fs.BoolVar(&f.shared, "s", false, "short for --shared")
	if !update {
		f.lockDelay = durationFlag{d: defaultLockDelay}
		fs.Var(&f.lockDelay, "lock-delay", "when the holder before us lost the lock (its lease expired or was revoked)\nrather than releasing it, wait `DUR` more before running CMD, so that what\nit had in flight lands first")
	}
	if update {
		fs.BoolVar(&f.allowEmpty, "allow-empty", false, "let an empty stdout of CMD replace the key's value with an empty value\n(without it, an empty stdout is refused and the key is left untouched)")
	}
}

func (f *lockFlags) wait() time.Duration {
	switch {
	case f.try:
		return 0
	case f.timeout.forever:
		return etcd.WaitForever
	}
	return f.timeout.d
}

// acquireContext bounds getting the lock, reaching the cluster included,
// by --timeout: a cluster that does not answer costs --timeout, not
// --op-timeout per step. The library's own wait ends a moment earlier, so
// that a lock that stays busy is reported as busy. With --try (one
// attempt) and --timeout none only --op-timeout bounds the steps.
func (f *lockFlags) acquireContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if w := f.wait(); w > 0 {
		return context.WithTimeout(ctx, w+250*time.Millisecond)
	}
	return context.WithCancel(ctx)
}

// reachError explains a failure to get the lock because the cluster did
// not answer within --timeout.
func (f *lockFlags) reachError(e *env, actx context.Context, err error) error {
	if err == nil || actx.Err() == nil || errors.Is(err, locker.ErrLocked) || errors.Is(err, locker.ErrLost) {
		return err
	}
	eps := ""
	if e.target != nil {
		eps = strings.Join(e.target.Endpoints, ",")
	}
	return &etcd.UnavailableError{Step: "getting the lock within --timeout " + f.timeout.String(), Endpoints: eps, Err: err}
}

func (f *lockFlags) check() error {
	if f.conflictExit < 0 || f.conflictExit > 255 {
		return usagef("--conflict-exit-code must be between 0 and 255, got %d", f.conflictExit)
	}
	if f.try && f.timeout.set {
		return usagef("--try makes one attempt and --timeout %s waits: give one of them", f.timeout.String())
	}
	if f.shared {
		return usagef("--shared is not available: an etcd lock has exactly one holder, so there is no\n" +
			"shared mode to take. A reader does not need one: every write replaces the key's value in one\n" +
			"transaction, so a plain read sees the old value or the new one, whole")
	}
	return nil
}

// busy gives a contention failure the caller's exit status; with --quiet
// or --conflict-exit-code 0 it says nothing.
func (f *lockFlags) busy(err error) error {
	if err == nil || !errors.Is(err, locker.ErrLocked) {
		return err
	}
	if f.quiet || f.conflictExit == 0 {
		return exitStatus(f.conflictExit)
	}
	if f.conflictExit != exitBusy {
		return busyStatus{err: err, status: f.conflictExit}
	}
	return err
}

// splitCommand takes "URL [--] CMD [ARG...]" apart, or, with -c, "URL"
// alone.
func (f *lockFlags) splitCommand(args []string) (string, []string, error) {
	if len(args) == 0 {
		return "", nil, usagef("missing URL")
	}
	if f.shell != "" {
		if len(args) > 1 && !(len(args) == 2 && args[1] == "--") {
			return "", nil, usagef("-c gives the command; nothing may follow the URL, got %q", args[1:])
		}
		return args[0], []string{"/bin/sh", "-c", f.shell}, nil
	}
	u, argv := args[0], args[1:]
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return "", nil, usagef("missing CMD after the URL (write: URL -- CMD [ARG...], or -c 'CMD' URL)")
	}
	return u, argv, nil
}

func init() {
	register(&command{
		name:    "lock",
		summary: "run a command while holding the lock of an etcd key",
		usage:   "lock [--timeout DUR|none | --try] [--conflict-exit-code N] [--quiet] [--ttl DUR] {URL -- CMD [ARG...] | -c 'CMD' URL}",
		help: `Take the lock of the key named by URL on the etcd cluster, run CMD, release the
lock, and exit with CMD's status.

The lock is a key under KEY.lock/ bound to this process's session lease,
kept alive while the process runs; it names the holder (pid, host, since).
A holder that stops (killed, paused, cut off from the cluster) loses the lock
when its lease runs out (--ttl). The holder steps down first: once no
keepalive has been confirmed for the TTL minus 1 s (counted from when the
last confirmed one was sent, so before the server can expire the lease), CMD
is sent SIGTERM, since it may no longer run under the lock, and the command
exits 75. CMD should exit within that second. A successor that was waiting
and finds that the holder before it lost the lock (its lease ended instead
of a release) waits --lock-delay (2s) more before starting its CMD, so that
what the lost holder had in flight lands first. This narrows the window; it
cannot close it for a CMD that ignores SIGTERM or acts long after: a
resource that must never see two holders should check EXACTFS_LOCK_TOKEN
(it grows with each acquisition) and refuse smaller ones.

CMD runs with EXACTFS_LOCK_URL, EXACTFS_LOCK_KEY (our lock key, where the file
backend sets EXACTFS_LOCK_PATH to its owner record) and EXACTFS_LOCK_TOKEN (as
with files, but here the fencing token: the lock key's create revision, which
grows with each acquisition) in its environment. SIGINT, SIGTERM and SIGHUP
are forwarded to CMD.

Examples:
  exactfs lock etcd://10.0.0.1:2379,10.0.0.2:2379/app/deploy -- ./deploy.sh
  EXACTFS_ETCD_ENDPOINTS=10.0.0.1:2379 exactfs lock --try etcd:///app/cron -- ./job.sh`,
		flags: func(fs *flag.FlagSet) any { f := &lockFlags{}; f.register(fs, false); return f },
		run:   runLock,
	})
	register(&command{
		name:    "update",
		summary: "read-modify-write an etcd key through a command, under its lock, fenced by the server",
		usage:   "update [--timeout DUR|none | --try] [--conflict-exit-code N] [--quiet] [--allow-empty] [--ttl DUR] {URL -- CMD [ARG...] | -c 'CMD' URL}",
		help: `Under the lock of the key named by URL, run CMD with the key's value on its
stdin (empty when the key does not exist). If CMD exits 0, its stdout is
written to the key in one transaction that also releases the lock, and that
the server applies only if this process still holds the lock (its lock key
has the same create revision) and the key was not changed since it was read.
If CMD exits with any other status, nothing is written and the command exits
with CMD's status. If CMD exits 0 but prints nothing, the key is left
untouched and the command exits 65 (an empty stdout is nearly always a
command that wrote its result elsewhere); --allow-empty writes the empty
value.

A holder that lost its lock while CMD ran (it was paused or cut off longer
than --ttl, and someone else may have taken the lock) writes nothing: the
command exits 75 and says so. CMD is never run again behind your back.

CMD runs with EXACTFS_LOCK_URL, EXACTFS_LOCK_KEY and EXACTFS_LOCK_TOKEN (the
fencing token, as for lock) in its environment: a CMD that also acts
elsewhere can pass the token on, and a resource that checks it refuses a
holder older than the last one it saw.

Examples:
  exactfs update etcd://10.0.0.1:2379,10.0.0.2:2379/app/state.json -- jq -c '.n += 1'
  exactfs update etcds://etcd.internal:2379/app/counter -- awk '{ n = $1 } END { print n + 1 }'`,
		flags: func(fs *flag.FlagSet) any { f := &lockFlags{}; f.register(fs, true); return f },
		run:   runUpdate,
	})
}

// relay forwards SIGINT, SIGTERM and SIGHUP to CMD once it runs, and
// cancels the wait for the lock before that.
type relay struct {
	ch     chan os.Signal
	cancel context.CancelFunc
	mu     sync.Mutex
	child  *os.Process
	got    os.Signal
	done   chan struct{}
}

func newRelay(cancel context.CancelFunc) *relay {
	r := &relay{ch: make(chan os.Signal, 4), cancel: cancel, done: make(chan struct{})}
	signal.Notify(r.ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-r.done:
				return
			case s := <-r.ch:
				r.mu.Lock()
				if r.got == nil {
					r.got = s
				}
				switch {
				case r.child == nil:
					r.cancel()
				case jobctl.FromTerminal(s):
					// CMD is in our foreground process group and got the
					// keyboard's signal itself: a second copy could cut
					// short the clean exit the first one began.
				default:
					_ = r.child.Signal(s)
				}
				r.mu.Unlock()
			}
		}
	}()
	return r
}

func (r *relay) stop() { signal.Stop(r.ch); close(r.done) }

// start starts CMD unless a signal came first, and forwards signals to it
// from then on: no signal can fall between the check and the start.
func (r *relay) start(e *env, argv []string, stdin io.Reader, stdout io.Writer, extraEnv []string) (*exec.Cmd, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.got.(syscall.Signal); ok {
		return nil, exitStatus(128 + int(s))
	}
	cmd, err := startCmd(e, argv, stdin, stdout, extraEnv)
	if err == nil {
		r.child = cmd.Process
	}
	return cmd, err
}

// ended stops forwarding to a CMD that has exited.
func (r *relay) ended() {
	r.mu.Lock()
	r.child = nil
	r.mu.Unlock()
}

// interrupted is the status for a signal that came while we waited for
// the lock, or nil.
func (r *relay) interrupted(e *env, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.got.(syscall.Signal)
	if !ok {
		return nil
	}
	fmt.Fprintf(e.stderr, "%s %s: interrupted by %v while waiting for the lock; nothing was run\n", e.prog, name, s)
	return exitStatus(128 + int(s))
}

// startCmd starts CMD; one that cannot be started gets the shell's
// statuses (127 not found, 126 not executable).
func startCmd(e *env, argv []string, stdin io.Reader, stdout io.Writer, extraEnv []string) (*exec.Cmd, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, e.stderr
	cmd.Env = append(os.Environ(), extraEnv...)
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		st := exitNoExec
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			st = exitNotFound
		}
		fmt.Fprintf(e.stderr, "%s: cannot run %s: %v\n", e.prog, argv[0], err)
		return nil, exitStatus(st)
	}
	return cmd, nil
}

// cmdStatus is a finished CMD's status, 128+n when killed by signal n.
func cmdStatus(cmd *exec.Cmd) int {
	ps := cmd.ProcessState
	if ps == nil {
		return exitIO
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lockEnv is what CMD learns about the lock it runs under, in lock and
// update alike. EXACTFS_LOCK_TOKEN is the file backend's variable (there
// the owner record's random token; here the fencing token, which grows);
// EXACTFS_LOCK_KEY is the counterpart of its EXACTFS_LOCK_PATH, which is
// not set, since a key is no path a command could open.
func lockEnv(t *etcd.Target, h *etcd.Held) []string {
	return []string{"EXACTFS_LOCK_URL=" + t.URL, "EXACTFS_LOCK_KEY=" + h.Key(), "EXACTFS_LOCK_TOKEN=" + h.Token()}
}

// prepare checks the flags and "URL -- CMD" of lock and update and
// connects.
func prepare(e *env, f *lockFlags, args []string) (*etcd.Client, *etcd.Lock, *etcd.Target, []string, error) {
	if err := f.check(); err != nil {
		return nil, nil, nil, nil, err
	}
	u, argv, err := f.splitCommand(args)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	// Authenticating is a step (--op-timeout) of reaching the cluster,
	// which --timeout bounds too.
	reach := f.opTimeout.d
	if w := f.wait(); w > 0 && w+250*time.Millisecond < reach {
		reach = w + 250*time.Millisecond
	}
	// --allow-empty is update's (the library refuses an empty result by
	// default, as the CLI does; its own check names CMD's stdout).
	c, l, t, err := connect(e, &f.clusterFlags, u, reach, etcd.WithWait(f.wait()), etcd.WithLockDelay(f.lockDelay.d),
		etcd.WithAllowEmpty(f.allowEmpty))
	return c, l, t, argv, err
}

func runLock(e *env, opts any, args []string) error {
	f := opts.(*lockFlags)
	c, l, t, argv, err := prepare(e, f, args)
	if err != nil {
		return err
	}
	defer closeClient(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRelay(cancel)
	defer r.stop()

	actx, acancel := f.acquireContext(ctx)
	h, err := l.Acquire(actx, f.wait())
	err = f.reachError(e, actx, err)
	acancel()
	if err != nil {
		if ierr := r.interrupted(e, "lock"); ierr != nil {
			return ierr
		}
		return f.busy(err)
	}
	cmd, err := r.start(e, argv, e.stdin, e.stdout, lockEnv(t, h))
	if err != nil {
		_ = h.Unlock()
		return err
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	var lost error
	select {
	case <-waited:
	case <-h.Lost():
		lost = h.Err()
		fmt.Fprintf(e.stderr, "%s lock: %v\n  sending SIGTERM to %s: it no longer runs under the lock\n", e.prog, lost, argv[0])
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-waited
	}
	status := cmdStatus(cmd)
	if lost != nil {
		return exitStatus(exitBusy)
	}
	if uerr := h.Unlock(); uerr != nil {
		fmt.Fprintf(e.stderr, "%s lock: releasing %s: %v\n", e.prog, h.Key(), uerr)
		if status == 0 {
			return fmt.Errorf("the command succeeded, but the lock could not be released: %w", uerr)
		}
		return exitStatus(status)
	}
	// Released: let the lease lapse rather than revoke it, so that a
	// waiting successor sees a live lease and skips its lock-delay.
	c.Detach()
	return exitStatus(status)
}

// emptyOutput is fn's error when CMD exited 0 but printed nothing and
// --allow-empty was not given: the key is left untouched (the file
// backend's guard, with its exit status 65).
type emptyOutput struct{ key string }

func (e emptyOutput) Error() string {
	return fmt.Sprintf("the command exited 0 but printed nothing; %s was left untouched", e.key)
}

// cmdFailed is fn's error when CMD exits non-zero.
type cmdFailed struct{ status int }

func (c cmdFailed) Error() string { return "the command exited with status " + strconv.Itoa(c.status) }

func runUpdate(e *env, opts any, args []string) error {
	f := opts.(*lockFlags)
	c, l, t, argv, err := prepare(e, f, args)
	if err != nil {
		return err
	}
	defer closeClient(c)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := newRelay(cancel)
	defer r.stop()

	actx, acancel := f.acquireContext(ctx)
	defer acancel()
	ran := false
	_, err = l.UpdateHeld(actx, func(h *etcd.Held, old []byte) ([]byte, error) {
		ran = true
		var out bytes.Buffer
		cmd, err := r.start(e, argv, bytes.NewReader(old), &out, lockEnv(t, h))
		if err != nil {
			return nil, err
		}
		_ = cmd.Wait()
		r.ended()
		if st := cmdStatus(cmd); st != 0 {
			return nil, cmdFailed{st}
		}
		if out.Len() == 0 && !f.allowEmpty {
			return nil, emptyOutput{t.Key}
		}
		return out.Bytes(), nil
	})
	if err == nil {
		c.Detach() // released by the commit: see runLock
		return nil
	}
	var cf cmdFailed
	var st exitStatus
	switch {
	case !ran:
		if ierr := r.interrupted(e, "update"); ierr != nil {
			return ierr
		}
		return f.busy(f.reachError(e, actx, err))
	case errors.As(err, &cf):
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				if !errors.As(x, &cf) {
					fmt.Fprintf(e.stderr, "%s update: %v\n", e.prog, x)
				}
			}
		}
		return exitStatus(cf.status)
	case errors.As(err, &st):
		return st
	}
	if errors.Is(err, locker.ErrLost) {
		return fmt.Errorf("%w; the command's output was discarded", err)
	}
	return err
}
