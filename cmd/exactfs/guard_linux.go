package main

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// selfExecutable is the running binary, even if its file was replaced or
// removed since it started (an upgrade in progress).
func selfExecutable() (string, error) { return "/proc/self/exe", nil }

// becomeSubreaper makes the guard the parent every orphan of CMD's tree is
// reparented to, whatever session or process group it moved to.
func becomeSubreaper() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// prepareGuardParent makes exactfs a subreaper too, so that if the guard
// itself is killed, what CMD left comes back to exactfs, which kills it
// (killOrphans) before it releases the lock.
func prepareGuardParent() { becomeSubreaper() }

// guardAttr puts the guard in a process group of its own. A SIGKILL of
// exactfs's whole process group (kill -9 %1 in a shell, kill -9 -PGID, a
// supervisor ending a job) then kills exactfs and CMD but not the guard,
// which sees the lifeline end and kills what is left of CMD's tree: a
// process that moved to a session of its own (setsid) is out of that group
// and, with the guard dead too, went on unlocked under init. The guard reads
// nothing from the terminal, and writes to it only with SIGTTOU ignored
// (guardSay: "stty tostop" would stop it otherwise), so being outside its
// foreground group costs nothing; the signals it gets itself it ignores
// anyway (runGuard).
//
// Not where exactfs's own process group has no number in its pid namespace
// (getpgrp(2) gives 0: the group's leader is outside it, as unshare is for
// "unshare --pid --fork exactfs ..." or a container runtime for what it
// execs): the guard could not name that group to put CMD back in it, and CMD,
// left in the guard's group, would be out of the terminal's foreground group
// (stopped by SIGTTIN as it read the terminal, deaf to ^C and ^Z). The guard
// stays in exactfs's group there, CMD with it, and a kill of that whole group
// takes the guard too.
func guardAttr() *syscall.SysProcAttr {
	if syscall.Getpgrp() == 0 {
		return nil
	}
	return &syscall.SysProcAttr{Setpgid: true}
}

// cmdAttr puts CMD back in exactfs's process group pgid (the terminal's job
// control is unchanged: ^C, ^Z and a CMD that reads the terminal work as
// they did when CMD was exactfs's child; the subreaper reaches every
// descendant without a group) and has the kernel SIGKILL CMD if the guard
// dies first. pgid 0 (not known) leaves CMD in the guard's group.
func cmdAttr(pgid int) (attr *syscall.SysProcAttr, ownGroup bool) {
	attr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if pgid > 0 {
		attr.Setpgid, attr.Pgid = true, pgid
	}
	return attr, false
}

// descendants lists every process below this one (zombies too), found by
// its parent, as each /proc/PID/stat gives it. It reads all of /proc rather
// than /proc/PID/task/*/children, which only kernels built with
// CONFIG_PROC_CHILDREN have. A process that exits during the walk is simply
// not listed. The pids are /proc's (see procSelf), not necessarily this pid
// namespace's.
func descendants() []int {
	self, ok := procSelf()
	if !ok {
		return nil
	}
	out, _ := tree(self)
	return out
}

// signalDescendants sends sig to every process below this one. Each is
// signalled through its /proc/PID directory, opened after the walk and
// checked through that same descriptor (its parent is still this process or
// one of the tree), with pidfd_send_signal(2), which takes such a descriptor
// as a pidfd: a pid freed and reused between the walk and the signal is
// never signalled (the descriptor of the old process's directory reads
// nothing once it is gone), and /proc's pid numbers are never handed to
// kill(2), which reads them in this pid namespace: under "unshare --pid
// --fork" without --mount-proc /proc is the parent namespace's, where every
// process of this one has another number. kill(2) is the fallback where
// pidfd_send_signal is missing (before Linux 5.1), and only where /proc's
// numbers are this namespace's.
func signalDescendants(sig syscall.Signal) {
	self, ok := procSelf()
	if !ok {
		return
	}
	pids, _ := tree(self)
	inTree := map[int]bool{self: true}
	for _, pid := range pids {
		inTree[pid] = true
	}
	killOK := self == os.Getpid()
	for _, pid := range pids {
		fd, err := unix.Open("/proc/"+strconv.Itoa(pid), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone already
		}
		if ppid, ok := parentAt(fd); ok && inTree[ppid] {
			if err := unix.PidfdSendSignal(fd, sig, nil, 0); err == unix.ENOSYS && killOK {
				unix.Kill(pid, sig)
			}
		}
		unix.Close(fd)
	}
}

// procSelf is this process's pid as /proc numbers it: getpid(2) gives the
// pid in this process's own pid namespace, while /proc shows the pids of
// the namespace it was mounted for, an ancestor's after "unshare --pid
// --fork" without --mount-proc. false: /proc does not show this process at
// all (none is mounted, or it is a descendant namespace's), and no walk can
// find its descendants.
func procSelf() (int, bool) {
	s, err := os.Readlink("/proc/self")
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil
}

// tree walks /proc: the processes below root, breadth first, and the parent
// of each.
func tree(root int) (pids []int, parent map[int]int) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	children := map[int][]int{}
	parent = map[int]int{}
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
			parent[pid] = ppid
		}
	}
	queue := children[root]
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		pids = append(pids, pid)
		queue = append(queue, children[pid]...)
	}
	return pids, parent
}

// parentOf reads the parent pid from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return parseParent(b)
}

// parentAt reads the parent pid from the stat file of the /proc/PID
// directory open at dirfd.
func parentAt(dirfd int) (int, bool) {
	fd, err := unix.Openat(dirfd, "stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	f := os.NewFile(uintptr(fd), "stat")
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return 0, false
	}
	return parseParent(b)
}

// parseParent finds the parent pid in the text of a /proc/PID/stat file:
// the fourth field, counted after the command name, which is in parentheses
// and may itself hold spaces and parentheses.
func parseParent(b []byte) (int, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(string(f[1]))
	return ppid, err == nil
}
