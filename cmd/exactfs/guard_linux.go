package main

import (
	"bytes"
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

// descendants lists every process below root (zombies too), found by its
// parent, as each /proc/PID/stat gives it. It reads all of /proc rather than
// /proc/PID/task/*/children, which only kernels built with
// CONFIG_PROC_CHILDREN have. A process that exits during the walk is simply
// not listed.
func descendants(root int) []int {
	out, _ := tree(root)
	return out
}

// signalDescendants sends sig to every process below root. Each is signalled
// through a pidfd opened after the walk and checked against it (its parent is
// still root or a process of the tree), so a pid that was freed and reused
// between the walk and the signal is never signalled; kill(2) is the fallback
// where pidfds are missing (before Linux 5.3).
func signalDescendants(root int, sig syscall.Signal) {
	pids, _ := tree(root)
	inTree := map[int]bool{root: true}
	for _, pid := range pids {
		inTree[pid] = true
	}
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err == unix.ENOSYS {
			unix.Kill(pid, sig)
			continue
		}
		if err != nil {
			continue // gone already
		}
		if ppid, ok := parentOf(pid); ok && inTree[ppid] {
			unix.PidfdSendSignal(fd, sig, nil, 0)
		}
		unix.Close(fd)
	}
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

// parentOf reads the parent pid from /proc/PID/stat: the fourth field,
// counted after the command name, which is in parentheses and may itself
// hold spaces and parentheses.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
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
