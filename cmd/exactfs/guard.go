//go:build unix

package main

// The guard keeps every process of CMD's tree inside the lock.
//
// exactfs cannot do that itself: the lock is reclaimed by the next caller
// the moment exactfs is gone (its pid is dead, its kernel lock is released),
// and SIGKILL gives exactfs no chance to stop anything. PR_SET_PDEATHSIG only
// reaches a direct child, so the children of `sh -c 'slow-job; true'` went on
// working unlocked. So exactfs runs CMD under a small guard process, itself
// re-executed with a hidden argument, that outlives a SIGKILL of exactfs:
//
//	exactfs (holds the lock) ──lifeline──▶ guard ──▶ CMD ──▶ CMD's children…
//
//   - The guard watches a pipe whose only write end exactfs holds
//     (close-on-exec, so neither the guard nor CMD has a copy). EOF while
//     CMD's tree is still there means exactfs died: the guard SIGKILLs the
//     whole tree at once and keeps doing so until nothing of it is left.
//   - On Linux the guard is a child subreaper (PR_SET_CHILD_SUBREAPER): every
//     orphaned descendant of CMD, whatever its process group or session
//     (setsid, a double-forked daemon), is reparented to the guard instead of
//     to init, so the guard can find all of them (a /proc walk from its own
//     pid) and knows, when wait4 says it has no children left, that none is
//     left at all. Elsewhere there is no subreaper: the guard puts CMD in its
//     own process group when exactfs is not in a terminal's foreground, and
//     kills that group (guard_other.go).
//   - CMD stays in exactfs's process group on Linux, as it was before the
//     guard: ^C, ^Z and a CMD that reads the terminal work as they always
//     did. The subreaper's walk reaches everything a process group would, and
//     the processes that leave it too. The guard itself leads a group of its
//     own (guardAttr), so a SIGKILL of exactfs's group (kill -9 %1) leaves
//     it alive to kill what of CMD's tree left that group (setsid); not
//     where exactfs's group has no number in its pid namespace (unshare
//     --pid --fork), and there that kill takes the guard too. Being in a
//     background group of the terminal, it writes there only with SIGTTOU
//     ignored (guardSay).
//   - exactfs forwards SIGINT, SIGTERM and SIGHUP to CMD through the guard
//     (a byte on the lifeline each: a copy the guard gets itself, from the
//     terminal or a kill of the process group, reached CMD directly and is
//     not sent again), and the guard exits with CMD's status (128+n for a
//     CMD killed by signal n), so exactfs reports exactly what it reported
//     when CMD was its own child.
//   - When CMD exits, the processes it left running in the background would
//     otherwise go on unlocked once exactfs releases. They get SIGTERM, then
//     SIGKILL after leftoverGrace, and the guard exits (so exactfs releases)
//     only when the last of them is gone. Waiting for them instead, as
//     flock(1) does through the descriptor they inherit, would turn every
//     forgotten `&` into a lock held for as long as a daemon lives.
//
// What remains is said in README.md ("lock and update run CMD's whole tree
// under the lock"): a process that leaves the tree altogether (started
// through another service manager, or in another container), the guard
// itself being SIGKILLed on a system without a subreaper, a SIGKILL of
// exactfs and the guard at once (on Linux that takes a kill of both process
// groups, or of the session), and the time between exactfs's death and the guard's SIGKILL, in which a peer that
// reclaims at once could start while the tree is being killed. That is the
// guard's scheduling latency plus one /proc walk: measured from exactfs's
// SIGKILL to the death of CMD's grandchild, median 17 ms and at most 71 ms
// on two cores under load 10, while a peer already waiting started its own
// CMD 40-225 ms after the kill in the same runs (PR_SET_PDEATHSIG, in the
// kernel, was faster, but reached only CMD itself). The
// guard does not keep the owner record's kernel lock: statelock does not hand
// its descriptor out, and a peer judging by the record's pid (TypeScript)
// would not look at it anyway.

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// guardArg is the hidden first argument that makes exactfs the guard of the
// command that follows it: exactfs __exactfs-guard -- CMD [ARG...]. It is no
// command of the CLI: main recognises it before any flag parsing, and the
// guard refuses to run unless fd 3 is a pipe (the lifeline).
const guardArg = "__exactfs-guard"

// pgidArg starts the guard's argument that names exactfs's process group.
const pgidArg = "--pgid="

// lifelineFD is where the guard finds the read end of the lifeline.
const lifelineFD = 3

// leftoverGrace is how long the processes CMD leaves running get between
// SIGTERM and SIGKILL once CMD has exited.
const leftoverGrace = time.Second

// A guard killing the tree looks again for what is left of it (a process can
// fork between the guard's look and its SIGKILL) whenever one of its children
// was reaped, and otherwise every sweepEvery, a pause that doubles up to
// maxSweepPause: a process the guard may not kill (a setuid descendant) then
// costs it almost nothing while it waits for it.
const (
	sweepEvery    = 10 * time.Millisecond
	maxSweepPause = time.Second
)

// sweepUntil calls sweep at once, then after every receive on reaped and
// every pause, until done is closed.
func sweepUntil(done, reaped <-chan struct{}, sweep func()) {
	pause := sweepEvery
	for {
		sweep()
		t := time.NewTimer(pause)
		select {
		case <-done:
			t.Stop()
			return
		case <-reaped:
			t.Stop()
		case <-t.C:
			pause = min(2*pause, maxSweepPause)
		}
	}
}

// notify sends on a channel of capacity one without blocking.
func notify(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// start starts the command under its guard. A command that cannot be
// started is reported by the guard with the shell's statuses, 127 not found
// and 126 not executable, which become exactfs's own.
func (c *child) start(e *env) (*running, error) {
	self, err := selfExecutable()
	if err != nil {
		fmt.Fprintf(e.stderr, "exactfs: cannot run %s: cannot find exactfs's own executable to guard it: %v\n", c.argv[0], err)
		return nil, exitStatus(exitCannotExec)
	}
	lifeR, lifeW, err := os.Pipe() // both close-on-exec
	if err != nil {
		fmt.Fprintf(e.stderr, "exactfs: cannot run %s: %v\n", c.argv[0], err)
		return nil, exitStatus(exitCannotExec)
	}
	defer lifeR.Close() // the guard has its own copy
	// The guard is told exactfs's process group, to put CMD back in it
	// when the guard leads a group of its own (guardAttr).
	cmd := exec.Command(self, append([]string{guardArg, pgidArg + strconv.Itoa(syscall.Getpgrp()), "--"}, c.argv...)...)
	cmd.Args[0] = "exactfs" // ps shows "exactfs __exactfs-guard --pgid=N -- CMD..."
	cmd.SysProcAttr = guardAttr()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	cmd.Env = append(os.Environ(), c.env...)
	cmd.ExtraFiles = []*os.File{lifeR} // fd 3 in the guard
	// No Pdeathsig: the guard must outlive exactfs to kill what is left.
	prepareGuardParent()
	if err := cmd.Start(); err != nil {
		lifeW.Close()
		fmt.Fprintf(e.stderr, "exactfs: cannot run %s: cannot start its guard %s: %v\n", c.argv[0], self, err)
		return nil, exitStatus(exitCannotExec)
	}
	signal := func(s os.Signal) {
		// Told through the lifeline, not sent to the guard: a signal sent
		// to the whole process group reaches the guard too, and the
		// guard must not forward that copy as well (runGuard).
		lifeW.Write([]byte{byte(signalNumber(s))})
	}
	return &running{cmd: cmd, signal: signal, after: func() {
		// Only now may the guard see EOF: it has exited already.
		lifeW.Close()
		killOrphans()
	}}, nil
}

// runGuard is the guard: it runs argv and returns the status exactfs exits
// with. See the top of this file.
func runGuard(args []string) int {
	pgid := 0
	if len(args) > 0 && strings.HasPrefix(args[0], pgidArg) {
		pgid, _ = strconv.Atoi(args[0][len(pgidArg):])
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		guardSay("exactfs: the guard was started without a command\n")
		return exitUsage
	}
	var st unix.Stat_t
	if err := unix.Fstat(lifelineFD, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		guardSay("exactfs: %s is how exactfs lock and update start CMD, not a command: it needs\n"+
			"the pipe exactfs gives it as fd %d. Run 'exactfs lock STATEFILE -- CMD' instead.\n", guardArg, lifelineFD)
		return exitUsage
	}
	unix.CloseOnExec(lifelineFD) // CMD must not hold a copy of it
	life := os.NewFile(lifelineFD, "lifeline")
	becomeSubreaper()
	sigs := make(chan os.Signal, 8)
	// SIGQUIT too: a ^\ reaches the guard with the whole foreground group;
	// the guard must not die of it while CMD's tree may outlive exactfs.
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)

	path, err := exec.LookPath(args[0])
	if err != nil {
		guardSay("exactfs: cannot run %s: %v\n", args[0], err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotExec
	}
	g := &guard{done: make(chan struct{}), reaped: make(chan struct{}, 1)}
	attr, ownGroup := cmdAttr(pgid)
	p, err := os.StartProcess(path, args, &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   attr,
	})
	if err != nil {
		guardSay("exactfs: cannot run %s: %v\n", args[0], err)
		if errors.Is(err, os.ErrNotExist) {
			return exitNotFound
		}
		return exitCannotExec
	}
	g.cmd, g.pid, g.ownGroup = p, p.Pid, ownGroup

	go func() {
		// Each byte is a signal exactfs received and forwards to CMD. EOF
		// means exactfs is gone. (A read error, which a pipe should never
		// give, is taken the same way: the safe side.)
		buf := make([]byte, 16)
		for {
			n, err := life.Read(buf)
			for _, b := range buf[:n] {
				g.forward(syscall.Signal(b))
			}
			if err != nil {
				break
			}
		}
		g.kill()
	}()
	go func() {
		for range sigs {
			// Sent to the guard itself: the terminal's ^C or ^\, a
			// hangup, or a kill of the whole process group, all of which
			// reached CMD directly as well. exactfs's forwards come
			// through the lifeline. The guard only must not die of them.
		}
	}()
	status := g.reap()
	close(g.done)
	return status
}

// guardSay writes the guard's own message to stderr. It is only ever called
// when no CMD is or will be running: the guard exits right after.
//
// The guard leads a process group of its own (guardAttr), so on the terminal
// of an interactive shell it is a background process even while exactfs and
// CMD are the foreground job: with "stty tostop", its write would stop it
// with SIGTTOU, and exactfs would wait for a stopped guard, holding the lock,
// until someone sent the guard (not the job: fg continues exactfs's group
// only) a SIGCONT. Ignoring SIGTTOU makes the kernel let the write through.
// It is set only here because an ignored signal stays ignored across exec:
// CMD, had it been started after, would have lost its own job control (a
// background exactfs's CMD writing to the terminal must stop, as any job's).
func guardSay(format string, a ...any) {
	signal.Ignore(syscall.SIGTTOU)
	fmt.Fprintf(os.Stderr, format, a...)
}

// guard is the state the guard's goroutines share.
type guard struct {
	cmd      *os.Process
	pid      int
	ownGroup bool // CMD leads its own process group (only without a subreaper)

	done   chan struct{} // closed when nothing is left and the guard exits
	reaped chan struct{} // a child of the guard was reaped

	mu      sync.Mutex
	cmdDone bool // CMD has been reaped: its pid is no longer ours to signal
	killing bool // the tree is being SIGKILLed
}

// reap waits for every child of the guard, records CMD's status, starts the
// end of the leftovers once CMD is gone, and returns when the tree is empty.
func (g *guard) reap() int {
	status := exitIO
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil { // ECHILD: no child left
			break
		}
		notify(g.reaped)
		if pid != g.pid {
			continue // an orphan reparented to us (subreaper) has exited
		}
		switch {
		case ws.Signaled():
			status = 128 + int(ws.Signal())
		case ws.Exited():
			status = ws.ExitStatus()
		}
		g.mu.Lock()
		g.cmdDone = true
		g.mu.Unlock()
		go g.endLeftovers()
	}
	// With a subreaper, no child means no descendant. Without one, the
	// orphans of CMD's process group went to init: wait until the group is
	// empty (its end was started when CMD was reaped).
	for pause := sweepEvery; g.ownGroup && groupAlive(g.pid); pause = min(2*pause, maxSweepPause) {
		time.Sleep(pause)
	}
	return status
}

// endLeftovers ends what CMD left running: SIGTERM, then SIGKILL after
// leftoverGrace if anything is still there.
func (g *guard) endLeftovers() {
	g.signalTree(syscall.SIGTERM)
	deadline := time.NewTimer(leftoverGrace)
	defer deadline.Stop()
	for {
		select {
		case <-g.done:
			return
		case <-deadline.C:
			g.kill()
			return
		case <-time.After(sweepEvery):
			if !g.treeLeft() {
				return
			}
		}
	}
}

// kill SIGKILLs the whole tree, again and again until the guard exits: a
// process may fork between a look at the tree and its SIGKILL, and its child
// is found (reparented to the subreaper) by the next look.
func (g *guard) kill() {
	g.mu.Lock()
	already := g.killing
	g.killing = true
	g.mu.Unlock()
	if !already {
		sweepUntil(g.done, g.reaped, func() { g.signalTree(syscall.SIGKILL) })
	}
}

// forward sends CMD a signal exactfs forwards to it, as exactfs sent it when
// CMD was its own child.
func (g *guard) forward(s syscall.Signal) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.cmdDone {
		g.cmd.Signal(s)
	}
}

// signalTree sends sig to every process of CMD's tree the guard can reach.
func (g *guard) signalTree(sig syscall.Signal) {
	g.mu.Lock()
	cmdAlive := !g.cmdDone
	g.mu.Unlock()
	if g.ownGroup {
		unix.Kill(-g.pid, sig)
	}
	if cmdAlive {
		g.cmd.Signal(sig) // a pidfd where the platform has one: never a reused pid
	}
	signalDescendants(sig)
}

// treeLeft reports whether any process of CMD's tree may still be running.
func (g *guard) treeLeft() bool {
	if g.ownGroup && groupAlive(g.pid) {
		return true
	}
	return len(descendants()) > 0
}

// groupAlive reports whether process group pgid has a member left.
func groupAlive(pgid int) bool {
	return unix.Kill(-pgid, 0) != unix.ESRCH
}

// killOrphans runs in exactfs after its guard has exited: if the guard was
// killed itself (it is the one process exactfs cannot protect), what CMD
// left is reparented to exactfs where exactfs is a subreaper too, and is
// killed here, before the lock is released.
func killOrphans() {
	var ws unix.WaitStatus
	if _, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil); err == unix.ECHILD {
		return // no child, so (a subreaper) no descendant: the common case
	}
	done, reaped := make(chan struct{}), make(chan struct{}, 1)
	go sweepUntil(done, reaped, func() {
		signalDescendants(unix.SIGKILL)
	})
	for {
		_, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			break
		}
		notify(reaped)
	}
	close(done)
}
