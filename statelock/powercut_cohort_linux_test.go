//go:build !exactfs_portable

package statelock

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/testfs"
	"github.com/exactfs/exactfs/internal/tsseed"
)

// TestPowerCutCohort is the power-cut harness (internal/testfs) under
// contention with the Go cohort on (SPEC §4.8: direct hand-off, the
// default), early release and group commit (§4.6). Writer processes (two
// goroutines each, so their Updates share batches) increment one counter
// and report every value whose Update returned nil; reader processes take
// the lock read-only (With, Lock/Unlock) and report the value they read
// once their call returned nil. The workers sleep now and then between the
// early release and the directory fsync (a slow disk; see powerCutCommon),
// the window in which the next holder, handed the lock directly, already
// sees bytes a cut would still erase. The filesystem is cut off
// (FS_IOC_SHUTDOWN without log flush) at a random point, in half of the
// rounds the moment a reader's report arrives, then mounted again. Then:
//
//   - the counter is a whole state at least as high as every value
//     acknowledged before the cut: no acknowledged update was lost;
//   - it is at least as high as every value a reader reported before the
//     cut: a read-only holder never reported bytes the cut erased (the
//     readers' rule);
//   - the lock is taken at once afterwards by the TypeScript reference (a
//     ts-seed increment), on whatever the cut left in F.lock, and then by
//     Go (an Update) on what it left;
//   - hand-offs happened before the cut (else this proves nothing about
//     the cohort), and, over the test, readers relied on the promised
//     fsync of an Update that handed them the lock (readsync.go) instead
//     of one of their own (else the second check proves nothing of it).
//
// Only reports the test had consumed before it cut count: after the cut,
// xfs answers a directory fsync with 0 (TestEarlyReleaseFsyncErrorIsUnknownOutcome),
// which no process sees after a real power cut, so a later report proves
// nothing either way. Each round continues on the state the last one left.
func TestPowerCutCohort(t *testing.T) {
	requireCohort(t)
	rounds := 3
	if testing.Short() {
		rounds = 1
	}
	for _, fsys := range powerCutFilesystems {
		t.Run(fsys.name, func(t *testing.T) {
			mnt := fsys.mount(t)
			state := filepath.Join(mnt, "state.json")
			config := t.TempDir()
			seed := uint64(time.Now().UnixNano())
			rng := rand.New(rand.NewPCG(seed, 0))
			t.Logf("seed %d", seed)
			if err := powerCutOnce(state, config); err != nil {
				t.Fatalf("the first Update: %v", err)
			}
			promised := 0
			for round := range rounds {
				after := 30 + rng.IntN(400)
				onReader := round%2 == 1
				r := powerCutRound(t, mnt, state, config, after, onReader)
				remountWhenUnused(t, mnt)
				got := readCounter(t, state)
				t.Logf("round %d: cut after %d reports (at a reader's: %v): %d acknowledged (highest %d), %d read (highest %d), %d hand-offs (%d to readers, "+
					"%d of whose reads rested on the granter's promised fsync), %d directory fsyncs timed to pair; reported after the cut: highest ack %d, highest read %d; after the remount %d",
					round+1, r.reports, onReader, r.acks, r.highAck, r.reads, r.highRead, r.handoffs, r.readerHandoffs, r.promised, r.pairWaits,
					r.lateAck, r.lateRead, got)
				promised += r.promised
				if r.acks == 0 || r.reads == 0 {
					t.Fatalf("before the cut %d updates were acknowledged and %d reads reported: nothing to check", r.acks, r.reads)
				}
				if r.handoffs == 0 {
					t.Fatalf("no direct hand-off before the cut (%d acknowledged updates, %d reads): the cohort was not in play", r.acks, r.reads)
				}
				if got < r.highAck {
					t.Fatalf("after the power cut the counter is %d, but %d was acknowledged before it: an acknowledged update was lost", got, r.highAck)
				}
				if got < r.highRead {
					t.Fatalf("after the power cut the counter is %d, but a read-only holder reported %d before it: it was told bytes the cut erased", got, r.highRead)
				}
				powerCutTakeAfter(t, state, config, got)
			}
			if promised == 0 {
				t.Fatal("no reader relied on a granter's promised fsync before a cut: the readers' rule through the mailbox was not in play")
			}
		})
	}
}

type powerCutReport struct {
	reports, acks, reads, highAck, highRead int
	handoffs, readerHandoffs, promised      int
	pairWaits                               int
	lateAck, lateRead                       int
}

// powerCutRound runs 3 writer and 2 reader processes on state until after
// reports (acks and reads) have come in, and then the next one (of a
// reader, when onReader), cuts the filesystem off at mnt, and kills them.
func powerCutRound(t *testing.T, mnt, state, config string, after int, onReader bool) powerCutReport {
	t.Helper()
	type event struct {
		kind   byte // 'a', 'r', 'h', 'p', 'q'
		reader bool // from a reader process
		n      int
	}
	events := make(chan event, 1<<16)
	var scanners sync.WaitGroup
	var cmds []*exec.Cmd
	var stderrs []*strings.Builder
	defer func() {
		if t.Failed() {
			for i, s := range stderrs {
				t.Logf("worker %d's messages:\n%s", i, s.String())
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kill := func() {
		for _, c := range cmds {
			c.Process.Kill()
			c.Wait()
		}
		cmds = nil
	}
	defer kill()
	for i := range 5 {
		mode := "writer"
		if i >= 3 {
			mode = "reader"
		}
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), powerCutWorkerEnv+"="+mode, "STATELOCK_STATE="+state, "STATELOCK_CONFIG="+config,
			"STATELOCK_SLOW_SYNC_MS=4")
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stderrs = append(stderrs, &stderr)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		scanners.Add(1)
		go func() {
			defer scanners.Done()
			s := bufio.NewScanner(out)
			for s.Scan() {
				kind, num, _ := strings.Cut(s.Text(), " ")
				n, _ := strconv.Atoi(num)
				if kind != "" {
					events <- event{kind[0], mode == "reader", n}
				}
			}
		}()
	}

	var r powerCutReport
	deadline := time.After(30 * time.Second)
wait:
	for {
		select {
		case e := <-events:
			switch e.kind {
			case 'a':
				r.acks++
				r.reports++
				r.highAck = max(r.highAck, e.n)
			case 'r':
				r.reads++
				r.reports++
				r.highRead = max(r.highRead, e.n)
			case 'h':
				r.handoffs++
				if e.reader {
					r.readerHandoffs++
				}
				continue
			case 'p':
				r.promised++
				continue
			case 'q':
				r.pairWaits++
				continue
			}
			// Not before both kinds reported and a hand-off was seen (the
			// first writes on a fresh filesystem can be slow to come).
			if r.reports > after && r.acks > 0 && r.reads > 0 && r.handoffs > 0 && (!onReader || e.kind == 'r') {
				break wait
			}
		case <-deadline:
			t.Logf("the cut point (%d reports) was not reached in 30s; cutting after %d", after, r.reports)
			break wait
		}
	}
	// Everything counted so far was reported, so acknowledged, before this.
	testfs.Shutdown(t, mnt)
	time.Sleep(200 * time.Millisecond)
	kill()
	scanners.Wait()
	close(events)
	for e := range events {
		switch e.kind {
		case 'a':
			r.lateAck = max(r.lateAck, e.n)
		case 'r':
			r.lateRead = max(r.lateRead, e.n)
		}
	}
	return r
}

// powerCutTakeAfter takes the lock after the remount, with got the
// counter the cut left: an Update from Go, then one increment by the
// TypeScript reference. Each must find the lock takeable at once (the
// workers that held it are dead) and the counter as the other left it.
//
// The reference goes first: it never reclaims a record it cannot parse,
// and judges a record by its pid alone. On ext4 and xfs the cut left
// F.lock empty (its creation journaled, its bytes not; 3 of 3 cuts), or a
// tombstone followed by zero bytes (its growth journaled, its padding
// not), until a write that makes a record file longer was fsynced at once
// (writeGrowing). The in-place rewrites after that need not be written
// back before the cut, so F.lock may hold any bytes its inode had on disk
// since: an older holder's record. After a real cut every such holder is
// dead; here the test process outlives the cuts, so it never writes a
// record on the mount: Go's Updates are worker processes of their own
// (powerCutOnce). Otherwise the reference finds the test process named
// alive in F.lock and waits for it (Go takes it: the slot lock is gone).
func powerCutTakeAfter(t *testing.T, state, config string, got int) {
	t.Helper()
	before := powerCutDump(filepath.Dir(state))
	defer func() {
		if t.Failed() {
			t.Logf("the lock's directory as the cut left it:\n%s", before)
		}
	}()
	want := got
	goTake := func() {
		if err := powerCutOnce(state, config); err != nil {
			t.Fatalf("after the power cut, Go could not take the lock: %v", err)
		}
		want++
		if n := readCounter(t, state); n != want {
			t.Fatalf("after Go's update the counter is %d, want %d", n, want)
		}
	}
	tsTake := func() {
		t.Run("typescript", func(t *testing.T) {
			cmd := tsseed.Command(t, config, state, 1, 0, "")
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// The reference waits minutes for a lock it cannot take.
			timer := time.AfterFunc(30*time.Second, func() { cmd.Process.Kill() })
			err := cmd.Wait()
			timer.Stop()
			if err != nil {
				t.Fatalf("after the power cut, the TypeScript reference could not take the lock: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
			}
			want++
			if n := readCounter(t, state); n != want {
				t.Fatalf("after the TypeScript reference's increment (%s) the counter is %d, want %d", strings.TrimSpace(stdout.String()), n, want)
			}
		})
		if t.Failed() {
			t.FailNow()
		}
	}
	tsTake()
	goTake()
}

// remountWhenUnused is remountWhenClosed that also waits for this
// process's mappings of files on mnt (a mailbox stays mapped for a moment
// after its last use, and keeps the filesystem busy as a descriptor does).
func remountWhenUnused(t *testing.T, mnt string) {
	t.Helper()
	waitUnused(t, mnt)
	remountWhenClosed(t, mnt)
}

// powerCutOnce runs one Update on state in a worker process of its own.
func powerCutOnce(state, config string) error {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), powerCutWorkerEnv+"=once", "STATELOCK_STATE="+state, "STATELOCK_CONFIG="+config)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v (an Update in a process of its own): %s", err, out)
	}
	return nil
}

// waitUnused waits until this process maps no file on mnt any more (the
// mailbox is unmapped when idle).
func waitUnused(t *testing.T, mnt string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(maps), " "+mnt+"/") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("this process still maps a file on %s:\n%s", mnt, maps)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// powerCutDump lists dir (the names the lock uses beside the state file),
// with each small file's bytes, for the log of a failure.
func powerCutDump(dir string) string {
	var b strings.Builder
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", p, err)
			return nil
		}
		info, ierr := e.Info()
		if ierr != nil {
			fmt.Fprintf(&b, "%s: %v\n", p, ierr)
			return nil
		}
		fmt.Fprintf(&b, "%s %v %d %s", p, info.Mode(), info.Size(), info.ModTime().Format(time.RFC3339Nano))
		if info.Mode().IsRegular() && info.Size() <= 2048 && !strings.HasPrefix(e.Name(), ".gjc-delete-") {
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", data)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}
