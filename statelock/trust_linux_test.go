package statelock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/exactfs/exactfs/statelock/internal/wake"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/testfs"
	"github.com/exactfs/exactfs/liveness"
)

// The trust tests run workers as other users: the test binary is copied
// where they can run it, and re-executed with SysProcAttr.Credential. The
// worker is chosen by trustWorkerEnv, dispatched from init so that it runs
// before TestMain.
const trustWorkerEnv = "STATELOCK_TRUST_WORKER"

func init() {
	mode := os.Getenv(trustWorkerEnv)
	if mode == "" {
		return
	}
	var err error
	switch mode {
	case "mallory":
		err = malloryWorker()
	case "victim":
		err = victimWorker()
	case "svc":
		err = svcWorker()
	case "lease":
		// Holds a file lease (TRUST_LEASE: "r" or "w") on TRUST_FILE for
		// TRUST_MS, then closes it.
		err = leaseWorker()
	case "big":
		// One Update with a 2 s budget; prints its error.
		uerr := Update(context.Background(), os.Getenv("TRUST_STATE"), func(b []byte) ([]byte, error) { return b, nil },
			WithHostIdentity(liveness.FixedHostIdentity(trustHost)), WithWait(2*time.Second))
		fmt.Println(oneLine(uerr))
	case "hold":
		var h *Held
		if h, err = Lock(context.Background(), os.Getenv("TRUST_STATE"), WithHostIdentity(liveness.FixedHostIdentity(trustHost))); err == nil {
			fmt.Println("H")
			time.Sleep(10 * time.Minute)
			err = h.Unlock()
		}
	default:
		err = fmt.Errorf("unknown trust worker %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "trust worker:", err)
		workerExit(1)
	}
	workerExit(0)
}

// trustUser is a throwaway user made with useradd for one test.
type trustUser struct {
	name     string
	uid, gid int
}

// addTrustUser makes a throwaway user (with its own group) and removes it
// when the test ends.
func addTrustUser(t *testing.T, tag string) trustUser {
	t.Helper()
	testfs.RequireRoot(t)
	useradd := testfs.RequireCommand(t, "useradd", "userdel")
	name := fmt.Sprintf("xt%s%d", tag, os.Getpid()%100000)
	out, err := exec.Command(useradd, "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
	if err != nil {
		t.Fatalf("useradd %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", name).Run() })
	u := trustUser{name: name}
	for _, f := range []struct {
		flag string
		dst  *int
	}{{"-u", &u.uid}, {"-g", &u.gid}} {
		out, err := exec.Command("id", f.flag, name).Output()
		if err != nil {
			t.Fatal(err)
		}
		if *f.dst, err = strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// sharedExe copies the test binary into a fresh 0755 directory under a
// 0755 temp root, so that other users can run it, and returns its path and
// the root (also 0755: other users can reach directories made under it).
func sharedExe(t *testing.T) (exe, root string) {
	t.Helper()
	root, err := os.MkdirTemp("", "statelock-trust-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(root, "statelock.test")
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return exe, root
}

// trustCmd is a re-execution of exe in trust worker mode, as u (nil: as
// ourselves).
func trustCmd(ctx context.Context, exe string, u *trustUser, mode string, env ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{trustWorkerEnv + "=" + mode}, env...)...)
	cmd.Dir = "/"
	cmd.WaitDelay = 5 * time.Second
	if u != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), NoSetGroups: true}}
	}
	return cmd
}

const trustHost = "trust-test-host"

// malloryWorker is the adversary: until its stdin closes, it swaps a fresh
// released tombstone of its own over F.lock and over the sidecar (created
// under a temp name, mode 0666 so any victim could write it, then renamed
// over the name: a sticky directory lets it do that to any file it owns),
// and plants an empty 0700 spare claim directory of its own, every 50–100
// ms. It prints how many of each swap succeeded.
func malloryWorker() error {
	dir, base := os.Getenv("TRUST_DIR"), os.Getenv("TRUST_BASE")
	stop := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
	var swaps [3]int
	plant := func(name string) bool {
		tmp := filepath.Join(dir, ".m-"+exactfs.NewUUID())
		host := trustHost
		if h := os.Getenv("TRUST_HOST"); h != "" {
			host = h
		}
		rec := tombstone(exactfs.NewUUID(), host).Encode()
		if err := os.WriteFile(tmp, rec, 0o666); err != nil {
			return false
		}
		os.Chmod(tmp, 0o666)
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			os.Remove(tmp)
			return false
		}
		return true
	}
	plantSpare := func() bool {
		tmp := filepath.Join(dir, ".m-"+exactfs.NewUUID())
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return false
		}
		if err := os.Rename(tmp, filepath.Join(dir, exactfs.SparePrefix+base+claimSuffix)); err != nil {
			os.Remove(tmp)
			return false
		}
		return true
	}
	step := func() {
		for i, ok := range []bool{plant(base + lockSuffix), plant(base + sidecarSuffix), plantSpare()} {
			if ok {
				swaps[i]++
			}
		}
	}
	step()
	fmt.Println("READY")
	for {
		select {
		case <-stop:
			fmt.Println("SWAPS", swaps[0], swaps[1], swaps[2])
			return nil
		case <-time.After(time.Duration(50+rand.IntN(51)) * time.Millisecond):
			step()
		}
	}
}

// victimWorker makes TRUST_N attempts at an update of the counter in
// TRUST_STATE, logging its hold intervals (enter after Lock, exit before
// Unlock, whatever happened in between) to TRUST_LOG, and prints one line
// per attempt (after "WROTE" when its write committed): "ACK" for an update whose lock, write and release all
// succeeded, "REFUSED <error>" for lock_object_untrusted, "ERR <error>"
// for anything else.
func victimWorker() error {
	state := os.Getenv("TRUST_STATE")
	n, _ := strconv.Atoi(os.Getenv("TRUST_N"))
	log, err := holdlog.Open(os.Getenv("TRUST_LOG"))
	if err != nil {
		return err
	}
	opts := []Option{WithHostIdentity(liveness.FixedHostIdentity(trustHost)), WithWait(10 * time.Second)}
	if c := os.Getenv("TRUST_CONFIG"); c != "" {
		opts = []Option{WithConfigRoot(c), WithWait(10 * time.Second)}
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for range n {
		h, err := Lock(context.Background(), state, opts...)
		if err != nil {
			if exactfs.CodeOf(err) == ReasonUntrusted {
				fmt.Fprintln(out, "REFUSED", oneLine(err))
			} else {
				fmt.Fprintln(out, "ERR", oneLine(err))
			}
			time.Sleep(time.Duration(20+rand.IntN(30)) * time.Millisecond)
			continue
		}
		log.Enter()
		opErr := h.update(func(old []byte) ([]byte, error) {
			s, err := parseCounter(old)
			if err != nil {
				return nil, err
			}
			time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
			s.N++
			// The reference worker's shape: {"n", "log": [...]}.
			s.Log = append(s.Log, counterEntry{Pid: os.Getpid(), N: s.N})
			return json.Marshal(s)
		})
		log.Exit()
		if opErr == nil {
			fmt.Fprintln(out, "WROTE")
		}
		if err := errors.Join(opErr, h.Unlock()); err != nil {
			fmt.Fprintln(out, "ERR", oneLine(err))
			continue
		}
		fmt.Fprintln(out, "ACK")
	}
	return nil
}

func oneLine(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.ReplaceAll(err.Error(), "\n", " | ")
}

// trustRun is the outcome of one adversary run.
type trustRun struct {
	acked, wrote, final, overlaps int
	refused, errs                 map[string][]string // by victim kind
	swaps                         string
}

// lost is the number of committed increments missing from the final count.
func (r trustRun) lost() int { return r.wrote - r.final }

// runAdversary runs mallory (m) against rootVictims root victims and
// userVictims victims of a third uid (v), each making n update attempts,
// in a fresh world-writable sticky directory under root.
func runAdversary(t *testing.T, exe, root string, m, v trustUser, rootVictims, userVictims, n int) trustRun {
	top, err := os.MkdirTemp(root, "run-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(top, 0o755)
	dir := filepath.Join(top, "spool")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(top, "logs")
	if err := os.Mkdir(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	mal := trustCmd(ctx, exe, &m, "mallory", "TRUST_DIR="+dir, "TRUST_BASE=state.json")
	stdin, err := mal.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	malOut, err := mal.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	mal.Stderr = os.Stderr
	if err := mal.Start(); err != nil {
		t.Fatal(err)
	}
	msc := bufio.NewScanner(malOut)
	if !msc.Scan() || msc.Text() != "READY" {
		t.Fatalf("mallory did not start: %q", msc.Text())
	}

	run := trustRun{refused: map[string][]string{}, errs: map[string][]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var logFiles []string
	start := func(kind string, u *trustUser, i int) {
		lf := filepath.Join(logs, fmt.Sprintf("%s-%d.log", kind, i))
		if err := os.WriteFile(lf, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if u != nil {
			os.Chown(lf, u.uid, u.gid)
		}
		logFiles = append(logFiles, lf)
		cmd := trustCmd(ctx, exe, u, "victim", "TRUST_STATE="+filepath.Join(dir, "state.json"),
			"TRUST_N="+strconv.Itoa(n), "TRUST_LOG="+lf)
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				line := sc.Text()
				mu.Lock()
				switch {
				case line == "ACK":
					run.acked++
				case line == "WROTE":
					run.wrote++
				case strings.HasPrefix(line, "REFUSED "):
					run.refused[kind] = append(run.refused[kind], line)
				default:
					run.errs[kind] = append(run.errs[kind], line)
				}
				mu.Unlock()
			}
			if err := cmd.Wait(); err != nil {
				mu.Lock()
				run.errs[kind] = append(run.errs[kind], "worker: "+err.Error())
				mu.Unlock()
			}
		}()
	}
	for i := range rootVictims {
		start("root", nil, i)
	}
	for i := range userVictims {
		start("user", &v, i)
	}
	wg.Wait()
	stdin.Close()
	if msc.Scan() {
		run.swaps = msc.Text()
	}
	mal.Wait()

	rep, err := holdlog.Check(true, logFiles...)
	run.overlaps = len(rep.Overlaps)
	if err != nil && run.overlaps == 0 {
		t.Errorf("hold logs: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	s, err := parseCounter(data)
	if err != nil {
		t.Fatalf("state %q: %v", data, err)
	}
	run.final = s.N
	t.Logf("adversary run: %d acknowledged, %d written, final count %d (lost %d), %d overlaps, mallory %s; refused: root %d, user %d; other errors: root %d, user %d",
		run.acked, run.wrote, run.final, run.lost(), run.overlaps, run.swaps, len(run.refused["root"]), len(run.refused["user"]),
		len(run.errs["root"]), len(run.errs["user"]))
	for kind, errs := range run.errs {
		for i, e := range errs {
			if i == 5 {
				t.Logf("  %s: ... %d more", kind, len(errs)-5)
				break
			}
			t.Logf("  %s error: %s", kind, e)
		}
	}
	for kind, r := range run.refused {
		t.Logf("  %s refusal (first of %d): %s", kind, len(r), r[0])
	}
	return run
}

// TestAdversaryTombstoneSwaps is issue 18's attack: in a world-writable
// sticky directory, another user (mallory) keeps renaming fresh released
// tombstones of its own over F.lock and the sidecar and planting a spare
// claim directory, while victims of two kinds (root, and a third user)
// update a counter. Exclusion must hold: no two hold intervals overlap
// (CLOCK_MONOTONIC, internal/holdlog) and the final count is the number of
// acknowledged updates. A victim that may not replace mallory's file (the
// third user, in a sticky directory) is refused with lock_object_untrusted
// naming mallory. On 7b17545 the victims adopt mallory's inodes and
// mallory's swaps let a second victim in while the first holds the lock.
func TestAdversaryTombstoneSwaps(t *testing.T) {
	n := 40
	if testing.Short() {
		n = 10
	}
	exe, root := sharedExe(t)
	m := addTrustUser(t, "m")
	v := addTrustUser(t, "v")

	// Both kinds of victim at once: root may replace mallory's files
	// (exact unlink, then its own create, which mallory cannot rename
	// over); the third user may not, and must be refused, never let in.
	run := runAdversary(t, exe, root, m, v, 4, 2, n)
	if run.overlaps != 0 || run.lost() != 0 || run.final != run.acked {
		t.Errorf("exclusion broken: %d overlaps, %d acknowledged, %d written, final count %d", run.overlaps, run.acked, run.wrote, run.final)
	}
	if run.acked != 4*n {
		t.Errorf("root victims acknowledged %d updates, want %d (every root victim may replace mallory's files)", run.acked, 4*n)
	}
	if len(run.errs["root"]) != 0 {
		t.Errorf("root victims failed: %v", run.errs["root"])
	}
	for _, r := range run.refused["user"] {
		if !strings.Contains(r, " can remove it") {
			t.Errorf("refusal does not say who can clear it: %s", r)
		}
	}
	if len(run.errs["user"]) != 0 {
		t.Errorf("the third user's victims failed other than by a refusal: %v", run.errs["user"])
	}

	// The third user alone against mallory: every attempt is refused, and
	// the refusal names mallory.
	run = runAdversary(t, exe, root, m, v, 0, 2, 5)
	if run.overlaps != 0 || run.acked != 0 || run.final != 0 {
		t.Errorf("the third user took mallory's lock: %d acknowledged, %d overlaps, final %d", run.acked, run.overlaps, run.final)
	}
	if len(run.refused["user"]) != 10 {
		t.Errorf("want 10 refusals, got %d; errors: %v", len(run.refused["user"]), run.errs["user"])
	}
	for _, r := range run.refused["user"] {
		if !strings.Contains(r, "("+m.name+")") || !strings.Contains(r, "lock_object_untrusted") || !strings.Contains(r, m.name+") or root can remove it") {
			t.Errorf("refusal does not name mallory (%s): %s", m.name, r)
		}
	}
}

// TestResidueOfAnotherUserKept: the residue sweep (and Recover's) never
// removes another user's file, however much its name looks like ours and
// however inert it is; a large residue file of ours (a copy of a state
// file, not a record) is still swept. On 7b17545 root's sweep removes the
// other user's files.
func TestResidueOfAnotherUserKept(t *testing.T) {
	other := addTrustUser(t, "r")
	e := newEnv(t)
	if err := os.WriteFile(e.state, []byte("current"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(e.state)
	at := func(n string) string { return filepath.Join(e.dir, n) }
	theirs := "." + base + "." + exactfs.NewUUID() + exactfs.ReplacementSuffix
	theirTemp := base + ".tmp-" + strconv.Itoa(deadPid(t)) + "-" + exactfs.NewUUID()
	theirLockStaging := "." + filepath.Base(e.lock) + "." + exactfs.NewUUID() + exactfs.StagingSuffix
	ours := "." + base + "." + exactfs.NewUUID() + exactfs.ReplacementSuffix
	for _, n := range []string{theirs, theirTemp, theirLockStaging} {
		if err := os.WriteFile(at(n), []byte("{"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(at(n), other.uid, other.gid); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		os.Chtimes(at(n), old, old)
	}
	if err := os.WriteFile(at(ours), []byte(strings.Repeat("x", 64<<10)), 0o600); err != nil {
		t.Fatal(err)
	}
	// Recover first: its residue path keeps the other user's lock staging.
	acts, err := Recover(e.state, false, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range acts {
		if filepath.Base(a.Path) == theirLockStaging {
			t.Errorf("Recover acted on another user's file: %+v", a)
		}
	}
	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	rep := h.Residue()
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{theirs, theirTemp, theirLockStaging} {
		if _, err := os.Lstat(at(n)); err != nil {
			t.Errorf("another user's %s was removed: %v", n, err)
		}
		if r := residueNamed(rep, n); r != nil && (r.Removed || !strings.Contains(r.Note, other.name)) {
			t.Errorf("%s: %+v, want kept naming %s", n, r, other.name)
		}
	}
	if r := residueNamed(rep, theirs); r == nil {
		t.Errorf("another user's staging file not reported: %+v", rep)
	}
	if _, err := os.Lstat(at(ours)); !os.IsNotExist(err) {
		t.Errorf("our own 64 KiB staging file was not swept: %v (report %+v)", err, residueNamed(rep, ours))
	}
}

// svcWorker makes TRUST_N updates of the counter in TRUST_STATE and fails
// at the first error.
func svcWorker() error {
	n, _ := strconv.Atoi(os.Getenv("TRUST_N"))
	for range n {
		err := Update(context.Background(), os.Getenv("TRUST_STATE"), func(old []byte) ([]byte, error) {
			s, err := parseCounter(old)
			if err != nil {
				return nil, err
			}
			s.N++
			return json.Marshal(s)
		}, WithHostIdentity(liveness.FixedHostIdentity(trustHost)), WithWait(5*time.Second))
		if err != nil {
			return err
		}
	}
	return nil
}

// serviceDir makes a directory owned by svc (0700) where svc can reach
// it, with its state file, svc's, holding {"n":0}.
func serviceDir(t *testing.T, root string, svc trustUser) (dir, state string) {
	t.Helper()
	dir, err := os.MkdirTemp(root, "svc-")
	if err != nil {
		t.Fatal(err)
	}
	state = filepath.Join(dir, "state.json")
	if err := os.WriteFile(state, []byte(`{"n":0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, state} {
		if err := os.Chown(p, svc.uid, svc.gid); err != nil {
			t.Fatal(err)
		}
	}
	return dir, state
}

// runAs runs a trust worker as u and fails the test if it fails.
func runAs(t *testing.T, exe string, u *trustUser, mode string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := trustCmd(ctx, exe, u, mode, env...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s as %s: %v\n%s", mode, u.name, err, out)
	}
}

// rootCycles takes and releases the lock n times as root, in process.
func rootCycles(t *testing.T, state string, n int) {
	t.Helper()
	for range n {
		h, err := Lock(context.Background(), state, WithHostIdentity(liveness.FixedHostIdentity(trustHost)), WithWait(5*time.Second))
		if err != nil {
			t.Fatalf("root's lock: %v", err)
		}
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
	}
}

// ownedBy fails the test unless each lock object that exists is owned by u.
func ownedBy(t *testing.T, u trustUser, state string) {
	t.Helper()
	base := filepath.Base(state)
	for _, n := range []string{base + lockSuffix, base + sidecarSuffix, exactfs.SparePrefix + base + claimSuffix} {
		fi, err := os.Lstat(filepath.Join(filepath.Dir(state), n))
		if errors.Is(err, os.ErrNotExist) && n != base+lockSuffix {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if int(st.Uid) != u.uid || int(st.Gid) != u.gid {
			t.Errorf("%s is owned by %d:%d, want the directory owner's %d:%d", n, st.Uid, st.Gid, u.uid, u.gid)
		}
	}
}

// startRootHolder starts a trust worker that takes the lock as root and
// holds it; it returns once the lock is held.
func startRootHolder(t *testing.T, exe, state string) *exec.Cmd {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cmd := trustCmd(ctx, exe, nil, "hold", "TRUST_STATE="+state)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if sc := bufio.NewScanner(out); !sc.Scan() || sc.Text() != "H" {
		t.Fatalf("holder did not lock: %q", sc.Text())
	}
	return cmd
}

// TestRootInServiceDirectory: root taking the lock in a directory owned
// by a service (another uid) does not lock the service out, in either
// order, and not when root's holder is SIGKILLed: every object root
// creates there is the directory owner's, and root adopts the directory
// owner's records. On 7b17545 root's first lock leaves root-owned 0600
// records that the service can never read again.
func TestRootInServiceDirectory(t *testing.T) {
	exe, root := sharedExe(t)
	svc := addTrustUser(t, "s")

	t.Run("root first", func(t *testing.T) {
		_, state := serviceDir(t, root, svc)
		rootCycles(t, state, 3)
		ownedBy(t, svc, state)
		runAs(t, exe, &svc, "svc", "TRUST_STATE="+state, "TRUST_N=3")
		if got := string(mustRead(t, state)); got != `{"n":3,"log":null}` && got != `{"n":3}` {
			t.Fatalf("state: %s", got)
		}
	})
	t.Run("root holder killed", func(t *testing.T) {
		_, state := serviceDir(t, root, svc)
		cmd := startRootHolder(t, exe, state)
		cmd.Process.Kill()
		cmd.Wait()
		ownedBy(t, svc, state)
		runAs(t, exe, &svc, "svc", "TRUST_STATE="+state, "TRUST_N=2")
	})
	t.Run("root waits behind a holder", func(t *testing.T) {
		// A contended wait seats a cohort waiter in the mailbox beside
		// the lock. Root must not make one in the service's directory: it
		// would be root's, and the service's processes could never use it.
		_, state := serviceDir(t, root, svc)
		cmd := startRootHolder(t, exe, state)
		go func() { time.Sleep(300 * time.Millisecond); cmd.Process.Kill() }()
		rootCycles(t, state, 1)
		cmd.Wait()
		ownedBy(t, svc, state)
		name, _ := wake.Name(filepath.Base(state) + lockSuffix)
		if fi, err := os.Lstat(filepath.Join(filepath.Dir(state), name)); err == nil {
			st := fi.Sys().(*syscall.Stat_t)
			t.Errorf("root's wait left a mailbox owned by %d in the service's directory", st.Uid)
		}
		runAs(t, exe, &svc, "svc", "TRUST_STATE="+state, "TRUST_N=2")
	})
	t.Run("service first", func(t *testing.T) {
		_, state := serviceDir(t, root, svc)
		runAs(t, exe, &svc, "svc", "TRUST_STATE="+state, "TRUST_N=2")
		before, err := os.Lstat(state + lockSuffix)
		if err != nil {
			t.Fatal(err)
		}
		rootCycles(t, state, 3)
		after, err := os.Lstat(state + lockSuffix)
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(before, after) {
			t.Errorf("root replaced the service's tombstone instead of reusing it")
		}
		ownedBy(t, svc, state)
		runAs(t, exe, &svc, "svc", "TRUST_STATE="+state, "TRUST_N=2")
	})
}

// TestHugeRecordsNotRead: a 1 GiB sparse F.lock, and a 1 GiB sparse
// sidecar, are malformed at once (exactfs.RecordCap): an Update with a 2 s
// budget gives up on them without reading a byte of them (a counting hook
// on the capture's read) and with a small peak memory (getrusage of a
// child process). On 7b17545 the child reads each gigabyte whole: 35-41 s
// and 4-5 GB.
func TestHugeRecordsNotRead(t *testing.T) {
	for _, which := range []string{lockSuffix, sidecarSuffix} {
		t.Run(strings.TrimPrefix(which, "."), func(t *testing.T) {
			e := newEnv(t)
			big := e.state + which
			f, err := os.OpenFile(big, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(1 << 30); err != nil {
				t.Fatal(err)
			}
			f.Close()

			// In process: no read of the big file at all.
			var reads int
			var mu sync.Mutex
			restore := hook.Set(hook.CaptureRead, func(p string) {
				if p == big {
					mu.Lock()
					reads++
					mu.Unlock()
				}
			})
			_, err = TryLock(e.state, e.opts()...)
			restore()
			if err == nil || !errors.Is(err, ErrLocked) {
				t.Fatalf("TryLock over a 1 GiB %s: %v, want ErrLocked", which, err)
			}
			if !strings.Contains(err.Error(), "larger than any record") {
				t.Errorf("the error does not say what is wrong: %v", err)
			}
			if reads != 0 {
				t.Errorf("the 1 GiB %s was read %d times", which, reads)
			}

			// In a child: the peak memory of a whole Update's wait.
			exe, _ := os.Executable()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := trustCmd(ctx, exe, nil, "big", "TRUST_STATE="+e.state)
			start := time.Now()
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v", err)
			}
			rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
			t.Logf("Update over a 1 GiB %s: %s, peak RSS %d KiB: %s", which, time.Since(start).Round(time.Millisecond), rss, strings.TrimSpace(string(out)))
			// The same child's Update on a lock with nothing odd in it is
			// the baseline (the race detector alone adds about 100 MiB);
			// reading the 1 GiB file would add at least that gigabyte.
			base := newEnv(t)
			bcmd := trustCmd(ctx, exe, nil, "big", "TRUST_STATE="+base.state)
			if bout, err := bcmd.CombinedOutput(); err != nil {
				t.Fatalf("baseline child: %v: %s", err, bout)
			}
			baseline := bcmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss
			t.Logf("baseline peak RSS %d KiB", baseline)
			if rss > baseline+256<<10 {
				t.Errorf("peak RSS %d KiB over a 1 GiB %s, %d KiB without it: it was read", rss, which, baseline)
			}
		})
	}
}

// TestInspectNonRegularSidecar: a directory, FIFO or symlink at
// F.lock.transition.owner makes every lock call refuse
// (unsafe_lock_path_type), and Inspect says so, naming what is there. On
// 7b17545 Inspect says "free" (or "released").
func TestInspectNonRegularSidecar(t *testing.T) {
	for _, c := range []struct {
		name, what string
		make       func(p string) error
	}{
		{"directory", "not a regular file", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"fifo", "a FIFO", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"symlink", "a symlink", func(p string) error { return os.Symlink("/etc/hostname", p) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			if err := c.make(e.sidecar); err != nil {
				t.Fatal(err)
			}
			_, err := TryLock(e.state, e.opts()...)
			if exactfs.CodeOf(err) != ReasonUnsafePathType {
				t.Fatalf("TryLock: %v, want unsafe_lock_path_type", err)
			}
			st, err := Inspect(e.state, e.opts()...)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != StateUnsafe || !strings.Contains(st.Detail, filepath.Base(e.sidecar)) || !strings.Contains(st.Detail, c.what) {
				t.Fatalf("Inspect: %s, %q; want unsafe naming the sidecar as %s", st.State, st.Detail, c.what)
			}
		})
	}
}

func leaseWorker() error {
	flag, kind := os.O_RDONLY, syscall.F_RDLCK
	if os.Getenv("TRUST_LEASE") == "w" {
		flag, kind = os.O_RDWR, syscall.F_WRLCK
	}
	f, err := os.OpenFile(os.Getenv("TRUST_FILE"), flag, 0)
	if err != nil {
		return err
	}
	const fSetLease = 1024 // F_SETLEASE
	if _, _, e := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), fSetLease, uintptr(kind)); e != 0 {
		return fmt.Errorf("F_SETLEASE: %w", e)
	}
	fmt.Println("L")
	ms, _ := strconv.Atoi(os.Getenv("TRUST_MS"))
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return f.Close()
}

// TestLeasedLockFileIsContention: another process's file lease on F.lock
// (a read lease: opening for write fails EWOULDBLOCK with O_NONBLOCK; a
// write lease: opening at all does) is contention, not an error: TryLock
// says ErrLocked, and Lock waits until the lease is gone. On 7b17545 both
// fail with an I/O error (exit 74 from the CLI).
func TestLeasedLockFileIsContention(t *testing.T) {
	for _, kind := range []string{"r", "w"} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t)
			if err := os.WriteFile(e.lock, tombstone(exactfs.NewUUID(), e.host.ID).Encode(), 0o600); err != nil {
				t.Fatal(err)
			}
			exe, _ := os.Executable()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := trustCmd(ctx, exe, nil, "lease", "TRUST_FILE="+e.lock, "TRUST_LEASE="+kind, "TRUST_MS=1500")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			if sc := bufio.NewScanner(out); !sc.Scan() || sc.Text() != "L" {
				t.Fatalf("the lease holder did not start: %q", sc.Text())
			}
			if _, err := TryLock(e.state, e.opts()...); !errors.Is(err, ErrLocked) {
				t.Fatalf("TryLock over a leased F.lock: %v, want ErrLocked", err)
			}
			h, err := Lock(context.Background(), e.state, e.opts(WithWait(20*time.Second))...)
			if err != nil {
				t.Fatalf("Lock over a leased F.lock: %v", err)
			}
			h.Unlock()
		})
	}
}

// TestCrashedClaimFromTheFuture: a crashed claim (directory and tombstone
// sidecar, nobody holding them) whose mtimes are an hour ahead of the
// clock (it was stepped back) is reclaimed once it has been seen unchanged
// for a second: Lock succeeds within its budget, Inspect explains, and
// Recover removes one. On 7b17545 Lock times out on it until the clock
// catches up, and Recover finds nothing.
func TestCrashedClaimFromTheFuture(t *testing.T) {
	plant := func(t *testing.T, e *testEnv) {
		if err := os.Mkdir(e.claim, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(e.sidecar, tombstone(exactfs.NewUUID(), e.host.ID).Encode(), 0o600); err != nil {
			t.Fatal(err)
		}
		future := time.Now().Add(time.Hour)
		for _, p := range []string{e.sidecar, e.claim} {
			if err := os.Chtimes(p, future, future); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Run("lock", func(t *testing.T) {
		e := newEnv(t)
		plant(t, e)
		st, err := Inspect(e.state, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(st.Claim.Why, "in the future") {
			t.Errorf("Inspect does not explain the future mtime: %q", st.Claim.Why)
		}
		h, err := Lock(context.Background(), e.state, e.opts(WithWait(10*time.Second))...)
		if err != nil {
			t.Fatalf("Lock over a crashed claim from the future: %v", err)
		}
		h.Unlock()
	})
	t.Run("recover", func(t *testing.T) {
		e := newEnv(t)
		plant(t, e)
		acts, err := Recover(e.state, false, e.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		if len(acts) == 0 || acts[0].Kind != "remove-claim" || !acts[0].Done {
			t.Fatalf("Recover: %+v", acts)
		}
		if _, err := os.Lstat(e.claim); !os.IsNotExist(err) {
			t.Fatalf("the claim is still there: %v", err)
		}
	})
}

// TestUntrustedTombstoneReplaced: a released tombstone at F.lock or at the
// sidecar that is ours but has another mode than 0600 is never reused in
// place: it is replaced by a record of our own (one link, 0600). One with
// a second link is refused (lock_object_untrusted: exact unlink never
// removes a hard-linked file), and neither name's bytes change. On
// 7b17545 both inodes are reused, so whoever holds the other name holds
// our lock.
func TestUntrustedTombstoneReplaced(t *testing.T) {
	for _, which := range []string{lockSuffix, sidecarSuffix} {
		for _, c := range []struct {
			name  string
			plant func(t *testing.T, p string)
		}{
			{"linked", func(t *testing.T, p string) {
				if err := os.Link(p, p+".other"); err != nil {
					t.Fatal(err)
				}
			}},
			{"mode0644", func(t *testing.T, p string) {
				if err := os.Chmod(p, 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		} {
			t.Run(strings.TrimPrefix(which, ".")+"/"+c.name, func(t *testing.T) {
				e := newEnv(t)
				p := e.state + which
				ts := tombstone(exactfs.NewUUID(), e.host.ID).Encode()
				if err := os.WriteFile(p, ts, 0o600); err != nil {
					t.Fatal(err)
				}
				c.plant(t, p)
				h, err := TryLock(e.state, e.opts()...)
				if c.name == "linked" {
					if exactfs.CodeOf(err) != ReasonUntrusted || !strings.Contains(err.Error(), "2 links") {
						t.Fatalf("TryLock over a hard-linked %s: %v, want lock_object_untrusted", which, err)
					}
					for _, n := range []string{p, p + ".other"} {
						if got := mustRead(t, n); !bytes.Equal(got, ts) {
							t.Fatalf("%s was written: %s", n, got)
						}
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				after, err := os.Lstat(p)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Unlock(); err != nil {
					t.Fatal(err)
				}
				// (The inode number alone proves nothing: the filesystem may
				// give the freed number to our new record at once.)
				if st := after.Sys().(*syscall.Stat_t); st.Nlink != 1 || after.Mode().Perm() != 0o600 {
					t.Fatalf("%s now: %d links, mode %v", which, st.Nlink, after.Mode())
				}
			})
		}
	}
}

// TestInspectNamesUntrustedRecord: Inspect says when F.lock is a file the
// lock will not reuse, and who owns it. On 7b17545 it says only
// "released".
func TestInspectNamesUntrustedRecord(t *testing.T) {
	other := addTrustUser(t, "i")
	e := newEnv(t)
	if err := os.WriteFile(e.lock, tombstone(exactfs.NewUUID(), e.host.ID).Encode(), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(e.lock, other.uid, other.gid); err != nil {
		t.Fatal(err)
	}
	st, err := Inspect(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateReleased || !strings.Contains(st.Detail, "("+other.name+")") || !strings.Contains(st.Detail, "never reused") {
		t.Fatalf("Inspect: %s, %q", st.State, st.Detail)
	}
}

// TestHugeFilesInLockDirectoriesNotRead: a 1 GiB sparse file planted in
// the claim directory, or as a legacy F.lock/info, is never read (the
// tree captures hash every file they hold): the lock is contention naming
// it, with no read of its bytes. On 7b17545 every look hashes the gigabyte.
func TestHugeFilesInLockDirectoriesNotRead(t *testing.T) {
	for _, c := range []struct {
		name string
		dir  func(e *testEnv) string
	}{
		{"claim", func(e *testEnv) string { return e.claim }},
		{"legacy", func(e *testEnv) string { return e.lock }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			d := c.dir(e)
			if err := os.Mkdir(d, 0o700); err != nil {
				t.Fatal(err)
			}
			big := filepath.Join(d, "info")
			f, err := os.Create(big)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(1 << 30); err != nil {
				t.Fatal(err)
			}
			f.Close()
			old := time.Now().Add(-time.Hour)
			os.Chtimes(d, old, old)
			var reads atomic.Int32
			defer hook.Set(hook.CaptureRead, func(p string) {
				if p == big || strings.HasSuffix(p, "/info") {
					reads.Add(1)
				}
			})()
			_, err = TryLock(e.state, e.opts()...)
			if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "1073741824 bytes") {
				t.Fatalf("TryLock: %v, want ErrLocked naming the 1 GiB file", err)
			}
			if _, err := Inspect(e.state, e.opts()...); err != nil {
				t.Fatal(err)
			}
			if n := reads.Load(); n != 0 {
				t.Fatalf("the 1 GiB file was read %d times", n)
			}
		})
	}
}
