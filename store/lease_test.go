//go:build unix

package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/sys"
	"golang.org/x/sys/unix"
)

func TestLeaseRecordOnDisk(t *testing.T) {
	dir := locksDir(t)
	before := time.Now().UnixMilli()
	l := acquire(t, dir, "job")
	if l.Path() != filepath.Join(dir, "job.lock") {
		t.Fatalf("path %s", l.Path())
	}
	b := readFile(t, l.Path())
	r, err := ParseLeaseRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.AttemptID != l.AttemptID() || r.Pid != os.Getpid() || r.BootID != kernelBootID(t) ||
		r.ProcessStartID != processStartID() || r.CreatedAt < before || r.HeartbeatAt != r.CreatedAt ||
		r.LeaseExpiresAt != r.CreatedAt+DefaultLeaseDuration.Milliseconds() || r.Released || r.Fence != 1 || l.Fence() != 1 {
		t.Fatalf("record %+v", r)
	}
	// The reference keys in the reference order, then ours, then "}\n".
	keys := []string{`{"attemptId":`, `,"pid":`, `,"bootId":`, `,"processStartId":`, `,"createdAt":`, `,"heartbeatAt":`, `,"leaseExpiresAt":`, `,"fence":`}
	rest := string(b)
	for _, k := range keys {
		i := strings.Index(rest, k)
		if i < 0 {
			t.Fatalf("key %s missing or out of order in %s", k, b)
		}
		rest = rest[i+len(k):]
	}
	if !strings.HasSuffix(rest, "}\n") {
		t.Fatalf("record does not end in }\\n: %q", b)
	}
	if m := mode(t, l.Path()); m != 0o600 {
		t.Fatalf("lock file mode %v", m)
	}
	if err := l.AssertOwned(); err != nil {
		t.Fatal(err)
	}
	ino := inode(t, l.Path())
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	r, err = ParseLeaseRecord(readFile(t, l.Path()))
	if err != nil || !r.Released || r.LeaseExpiresAt != r.HeartbeatAt || r.AttemptID != l.AttemptID() {
		t.Fatalf("released record %+v %v", r, err)
	}
	if inode(t, l.Path()) != ino {
		t.Fatal("release replaced the lock file instead of rewriting it")
	}
	if err := l.AssertOwned(); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("assert after release: %v", err)
	}
	// A released record is taken over at once; the token grows.
	l2 := acquire(t, dir, "job", WaitBudget(0))
	if l2.Fence() != 2 {
		t.Fatalf("second holder's fence %d", l2.Fence())
	}
}

func TestLeaseOtherBootReclaimableOnlyAfterExpiry(t *testing.T) {
	now := time.Now().UnixMilli()
	rec := func(boot string, expires int64) LeaseRecord {
		return LeaseRecord{AttemptID: "planted", Pid: os.Getpid(), BootID: boot, ProcessStartID: "p",
			CreatedAt: now - 1000, HeartbeatAt: now - 1000, LeaseExpiresAt: expires, Fence: 41}
	}
	for _, c := range []struct {
		name    string
		rec     LeaseRecord
		reclaim bool
	}{
		{"other boot, expired", rec("another-boot", now-1), true},
		{"other boot, current", rec("another-boot", now+60_000), false},
		{"this boot, expired, owner alive", rec(bootID(), now-1), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := locksDir(t)
			plantRecord(t, dir, "job", c.rec)
			start := time.Now()
			l, err := AcquireLease(context.Background(), dir, "job", WaitBudget(0))
			if !c.reclaim {
				if !errors.Is(err, ErrLeaseBusy) {
					t.Fatalf("acquire: %v, want busy", err)
				}
				r, _ := ParseLeaseRecord(readFile(t, filepath.Join(dir, "job.lock")))
				if r.AttemptID != "planted" {
					t.Fatal("the planted record was touched")
				}
				return
			}
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			defer l.Release()
			if time.Since(start) > time.Second {
				t.Fatal("waited for a record of another boot")
			}
			if l.Fence() != 42 {
				t.Fatalf("fence %d, want 42 (one more than the reclaimed record's)", l.Fence())
			}
		})
	}
}

// startHolder runs a child process that acquires the lease name in dir
// and waits to be killed; it returns once the child holds the lease.
func startHolder(t *testing.T, dir, name string, lease time.Duration) *exec.Cmd {
	t.Helper()
	cmd := helperCommand(t, "hold", "STORE_DIR="+dir, "STORE_NAME="+name,
		fmt.Sprintf("STORE_LEASE_MS=%d", lease.Milliseconds()), "STORE_HEARTBEAT_MS=100")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		if !strings.HasPrefix(s, "ready") {
			t.Fatalf("child said %q", s)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("child did not acquire the lease")
	}
	return cmd
}

// killHolder SIGKILLs the child, reaps it, and returns the record it left.
func killHolder(t *testing.T, cmd *exec.Cmd, lockPath string) LeaseRecord {
	t.Helper()
	time.Sleep(300 * time.Millisecond) // let a heartbeat land
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	r, err := ParseLeaseRecord(readFile(t, lockPath))
	if err != nil || r.Pid != cmd.Process.Pid {
		t.Fatalf("child's record %+v %v", r, err)
	}
	return r
}

// A holder SIGKILLed mid-lease is proved gone by the kernel: its record
// claims the kernel lock it held on the record's inode, and the lock went
// with its descriptors. Its lease is taken over at once, long before it
// expires (it used to stay busy for the whole lease, 60 s by default),
// while the same holder alive kept it.
func TestLeaseHolderSIGKILLedIsReclaimedAtOnce(t *testing.T) {
	if runtime.GOOS != "linux" || sys.Portable {
		t.Skip("OFD locks are Linux-only; elsewhere the expiry rule applies (TestLeaseHolderSIGKILLedIsReclaimedAfterExpiry)")
	}
	dir := locksDir(t)
	cmd := startHolder(t, dir, "job", time.Minute)
	lockPath := filepath.Join(dir, "job.lock")
	if r, err := ParseLeaseRecord(readFile(t, lockPath)); err != nil || !r.KernelLock {
		t.Fatalf("the holder's record does not claim the kernel lock: %+v %v", r, err)
	}
	// Alive, the holder keeps the lease: the kernel says its lock is held.
	_, err := AcquireLease(context.Background(), dir, "job", WaitBudget(0))
	if !errors.Is(err, ErrLeaseBusy) || !strings.Contains(err.Error(), "kernel lock on the record is held") {
		t.Fatalf("acquire while the holder lives: %v", err)
	}
	r := killHolder(t, cmd, lockPath)
	start := time.Now()
	l := acquire(t, dir, "job", WaitBudget(5*time.Second), PollInterval(10*time.Millisecond))
	if now := time.Now().UnixMilli(); now >= r.LeaseExpiresAt {
		t.Fatalf("reclaimed only %d ms after the dead holder's lease expired", now-r.LeaseExpiresAt)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("waited %v for a holder the kernel proved dead", waited)
	}
	if l.Fence() <= r.Fence {
		t.Fatalf("fence %d after the dead holder's %d", l.Fence(), r.Fence)
	}
}

// A holder frozen past its lease (SIGSTOP: no heartbeat, pid alive) still
// holds its kernel lock: the attestation says alive, and expiry alone
// does not steal the lease.
func TestLeaseFrozenHolderPastExpiryIsNotStolen(t *testing.T) {
	if runtime.GOOS != "linux" || sys.Portable {
		t.Skip("OFD locks are Linux-only (and left out of the exactfs_portable build)")
	}
	dir := locksDir(t)
	cmd := startHolder(t, dir, "job", 300*time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Signal(syscall.SIGCONT)
	r, err := ParseLeaseRecord(readFile(t, filepath.Join(dir, "job.lock")))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(time.UnixMilli(r.LeaseExpiresAt)) + 200*time.Millisecond)
	_, err = AcquireLease(context.Background(), dir, "job", WaitBudget(200*time.Millisecond))
	if !errors.Is(err, ErrLeaseBusy) || !strings.Contains(err.Error(), "not provably gone") ||
		!strings.Contains(err.Error(), "kernel lock on the record is held") {
		t.Fatalf("acquire from a frozen holder past its expiry: %v", err)
	}
}

// A dead holder whose record does not claim the kernel lock (a TypeScript
// peer, an earlier exactfs, a filesystem without OFD locks; here the
// claim is struck from the record after the SIGKILL) keeps the rule of
// SPEC §5.3: nobody takes its lease before it expires, and its successor
// takes it after, on the pid's ESRCH. (Before the kernel attestation this
// test killed an ordinary holder; such a holder is now reclaimed at once,
// see TestLeaseHolderSIGKILLedIsReclaimedAtOnce.)
func TestLeaseHolderSIGKILLedIsReclaimedAfterExpiry(t *testing.T) {
	dir := locksDir(t)
	cmd := startHolder(t, dir, "job", time.Second)
	lockPath := filepath.Join(dir, "job.lock")
	r := killHolder(t, cmd, lockPath)
	r.KernelLock = false
	if err := os.WriteFile(lockPath, r.Marshal(), 0o600); err != nil {
		t.Fatal(err)
	}
	// While the dead child's lease is still valid, nobody takes it.
	if left := time.Until(time.UnixMilli(r.LeaseExpiresAt)); left > 150*time.Millisecond {
		_, err := AcquireLease(context.Background(), dir, "job", WaitBudget(0))
		if !errors.Is(err, ErrLeaseBusy) {
			t.Fatalf("acquire before expiry: %v", err)
		}
	}
	l := acquire(t, dir, "job", WaitBudget(10*time.Second), PollInterval(10*time.Millisecond))
	if now := time.Now().UnixMilli(); now < r.LeaseExpiresAt {
		t.Fatalf("reclaimed %d ms before the dead holder's lease expired", r.LeaseExpiresAt-now)
	}
	if l.Fence() <= r.Fence {
		t.Fatalf("fence %d after the dead holder's %d", l.Fence(), r.Fence)
	}
}

func TestLeaseUnsafeLockPathRefused(t *testing.T) {
	dir := locksDir(t)
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("not a lock"), 0o644)
	os.Symlink(target, filepath.Join(dir, "sym.lock"))
	unix.Mkfifo(filepath.Join(dir, "fifo.lock"), 0o600)
	os.Mkdir(filepath.Join(dir, "dir.lock"), 0o700)
	within(t, 10*time.Second, func() {
		for name, code := range map[string]exactfs.Code{"sym": exactfs.CodeReparsePoint, "fifo": exactfs.CodeNotRegularFile, "dir": exactfs.CodeNotRegularFile} {
			_, err := AcquireLease(context.Background(), dir, name, WaitBudget(time.Second))
			if CodeOf(err) != code {
				t.Errorf("%s: %v, want %s", name, err, code)
			}
		}
	})
	if string(readFile(t, target)) != "not a lock" || mode(t, target) != 0o644 {
		t.Fatal("the symlink's target was touched")
	}
	if fi, err := os.Lstat(filepath.Join(dir, "sym.lock")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was removed")
	}
}

func TestLeaseNameAndDirChecks(t *testing.T) {
	dir := locksDir(t)
	for _, n := range []string{"", "..", "a/b", "a b", "x\x00"} {
		if _, err := AcquireLease(context.Background(), dir, n); CodeOf(err) != exactfs.CodeInvalidRequest {
			t.Errorf("name %q: %v", n, err)
		}
	}
	chmod(t, dir, 0o755)
	_, err := AcquireLease(context.Background(), dir, "job")
	wantCode(t, err, CodeModeMismatch)
	fresh := filepath.Join(t.TempDir(), "new-locks")
	l, err := AcquireLease(context.Background(), fresh, "job", CreateLocksDir())
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if mode(t, fresh) != 0o700 {
		t.Fatal("created locks dir is not 0700")
	}
}

// The fencing token strictly increases across 100 successive holders in
// four processes, in the order of their (non-overlapping) holds.
func TestLeaseFenceIncreasesAcrossProcesses(t *testing.T) {
	dir := locksDir(t)
	logPath := filepath.Join(t.TempDir(), "holds.log")
	if err := os.WriteFile(logPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const procs, each = 4, 25
	var cmds []*execCmd
	for i := 0; i < procs; i++ {
		cmd := helperCommand(t, "fence-seq", "STORE_DIR="+dir, "STORE_LOG="+logPath, fmt.Sprintf("STORE_N=%d", each))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, &execCmd{cmd, &stderr})
	}
	done := make(chan struct{})
	go func() {
		for _, c := range cmds {
			if err := c.Wait(); err != nil {
				t.Errorf("child: %v: %s", err, c.stderr)
			}
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		for _, c := range cmds {
			c.Process.Kill()
		}
		t.Fatal("children did not finish")
	}
	type hold struct {
		fence       uint64
		enter, exit int64
		pid         int
	}
	var holds []hold
	for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, logPath))), "\n") {
		var h hold
		if _, err := fmt.Sscanf(line, "%d %d %d %d", &h.fence, &h.enter, &h.exit, &h.pid); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		holds = append(holds, h)
	}
	if len(holds) != procs*each {
		t.Fatalf("%d holds logged, want %d", len(holds), procs*each)
	}
	sort.Slice(holds, func(i, j int) bool { return holds[i].enter < holds[j].enter })
	pids := map[int]bool{}
	for i, h := range holds {
		pids[h.pid] = true
		if i == 0 {
			continue
		}
		p := holds[i-1]
		if h.enter < p.exit {
			t.Fatalf("holds overlap: %+v and %+v", p, h)
		}
		if h.fence <= p.fence {
			t.Fatalf("fence did not increase: %+v then %+v", p, h)
		}
	}
	if len(pids) != procs {
		t.Fatalf("holds came from %d processes", len(pids))
	}
	if c, _ := parseFence(readFile(t, filepath.Join(dir, "seq.fence"))); c != holds[len(holds)-1].fence {
		t.Fatalf("counter %d, last fence %d", c, holds[len(holds)-1].fence)
	}
}

// A holder killed after writing its record and before raising the fence
// counter never handed its token out; its successor still goes past it,
// because it saw the token in the record it reclaimed.
func TestLeaseFenceSurvivesHolderKilledBeforeCounter(t *testing.T) {
	s := newStore(t)
	dir := filepath.Join(s.Path(), LocksDir)
	first := acquire(t, s.Path()+"/"+LocksDir, "job", CreateLocksDir())
	if err := first.Release(); err != nil {
		t.Fatal(err)
	}
	runCrashAt(t, s.Path(), "lease", hook.LeaseCreated)
	r, err := ParseLeaseRecord(readFile(t, filepath.Join(dir, "job.lock")))
	if err != nil || r.Fence != 2 {
		t.Fatalf("dead holder's record %+v %v", r, err)
	}
	if c, _ := parseFence(readFile(t, filepath.Join(dir, "job.fence"))); c != 1 {
		t.Fatalf("counter %d, want 1 (the holder died before raising it)", c)
	}
	l := acquire(t, dir, "job", WaitBudget(5*time.Second), PollInterval(10*time.Millisecond))
	if l.Fence() != 3 {
		t.Fatalf("fence %d, want 3", l.Fence())
	}
}

// A lock file chmodded away from 0600 while the lease is held (the
// reference's scenario 178) fences the holder: AssertOwned and Release
// refuse with mode_mismatch under lease_lost, and nothing more is written
// into the file.
func TestLeaseFileModeChangedIsRefused(t *testing.T) {
	dir := locksDir(t)
	l := acquire(t, dir, "job")
	if err := os.Chmod(l.Path(), 0o644); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, l.Path())
	for name, err := range map[string]error{"AssertOwned": l.AssertOwned(), "Release": l.Release()} {
		if !errors.Is(err, ErrLeaseLost) || exactfs.CodeOf(err) == "" || !strings.Contains(err.Error(), "0644") {
			t.Fatalf("%s after chmod 0644: %v, want lease_lost naming the mode", name, err)
		}
		var e *Error
		found := false
		for cur := error(err); cur != nil; cur = errors.Unwrap(cur) {
			if errors.As(cur, &e) && e.Code == CodeModeMismatch {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("%s: %v does not carry mode_mismatch", name, err)
		}
	}
	if after := readFile(t, l.Path()); !bytes.Equal(after, before) {
		t.Fatalf("the release wrote into the 0644 file: %q -> %q", before, after)
	}
}

// A kernel-attested lease record names the inode its attestation is held
// on (SPEC §5.3), and a contender applies the kernel rule only through a
// descriptor on that inode: a record whose dev and ino name another inode
// (the file reached through another inode object, as an overlay mount
// shows it) keeps the expiry rule, while the same record naming its own
// inode is reclaimed at once when no lock is held on it.
func TestLeaseKernelRuleOnlyOnTheNamedInode(t *testing.T) {
	if runtime.GOOS != "linux" || sys.Portable {
		t.Skip("OFD locks are Linux-only (and left out of the exactfs_portable build)")
	}
	dir := locksDir(t)
	l := acquire(t, dir, "job")
	r, err := ParseLeaseRecord(readFile(t, l.Path()))
	if err != nil || !r.KernelLock {
		t.Fatalf("record %+v %v: want the kernel lock claimed", r, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(l.Path(), &st); err != nil {
		t.Fatal(err)
	}
	if r.Dev != uint64(st.Dev) || r.Ino != st.Ino {
		t.Fatalf("record names dev %d ino %d, the file is dev %d ino %d", r.Dev, r.Ino, st.Dev, st.Ino)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}

	// A live-looking record (our own pid, a lease a minute from expiry)
	// that claims the kernel lock, with nobody holding one.
	plant := func(name string, dev, ino uint64) string {
		p := filepath.Join(dir, name+".lock")
		now := time.Now().UnixMilli()
		rec := LeaseRecord{AttemptID: exactfs.NewUUID(), Pid: os.Getpid(), BootID: r.BootID, ProcessStartID: "p",
			CreatedAt: now, HeartbeatAt: now, LeaseExpiresAt: now + time.Minute.Milliseconds(), KernelLock: true, Dev: dev, Ino: ino}
		if err := os.WriteFile(p, rec.Marshal(), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plant("other", uint64(st.Dev), st.Ino) // st: the released job.lock, another inode
	if _, err := AcquireLease(context.Background(), dir, "other", WaitBudget(0)); !errors.Is(err, ErrLeaseBusy) {
		t.Fatalf("a record naming another inode was judged by the kernel: %v", err)
	}
	self := plant("self", 0, 0)
	var own unix.Stat_t
	if err := unix.Lstat(self, &own); err != nil {
		t.Fatal(err)
	}
	rec, _ := ParseLeaseRecord(readFile(t, self))
	rec.Dev, rec.Ino = uint64(own.Dev), own.Ino
	if err := os.WriteFile(self, rec.Marshal(), 0o600); err != nil {
		t.Fatal(err)
	}
	acquire(t, dir, "self", WaitBudget(0))
}

// TestLeaseNoKernelLockWhereUnseen: see wantNoClaimWhereUnseen. It fails
// without exactfs.LockVisible's hook in the lease's check.
func TestLeaseNoKernelLockWhereUnseen(t *testing.T) {
	if runtime.GOOS != "linux" || sys.Portable {
		t.Skip("OFD locks are Linux-only; elsewhere no record claims the attestation")
	}
	wantNoClaimWhereUnseen(t)
}
