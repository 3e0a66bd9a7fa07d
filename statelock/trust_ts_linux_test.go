package statelock

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/holdlog"
	"github.com/exactfs/exactfs/internal/tsseed"
	"github.com/exactfs/exactfs/liveness"
)

// TestAdversaryWithReferencePeers is TestAdversaryTombstoneSwaps with
// TypeScript reference workers among the victims: mallory swaps its
// tombstones over F.lock and the sidecar in a sticky directory while two
// root Go victims and two root reference workers (internal/tsseed, one
// host id) increment one counter. The Go victims replace mallory's files
// with their own (which mallory cannot rename over); the reference
// workers join once that has happened (after the first Go update) and
// must then see no overlap and lose nothing. Before a trusting peer has
// replaced them, a reference worker adopts mallory's tombstone in place
// as it always did: the reference has no trust rule (see the report).
func TestAdversaryWithReferencePeers(t *testing.T) {
	exe, root := sharedExe(t)
	m := addTrustUser(t, "m")
	tsseed.Worker(t) // skips (fails in CI) without node 20 or the harness
	cfg := filepath.Join(root, "config")
	h, err := liveness.LoadHostIdentity(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "spool")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, os.ModeSticky|0o777); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state.json")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mal := trustCmd(ctx, exe, &m, "mallory", "TRUST_DIR="+dir, "TRUST_BASE=state.json", "TRUST_HOST="+h.ID)
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

	const n = 40
	var (
		wg           sync.WaitGroup
		mu           sync.Mutex
		logs         []string
		acked, wrote int
		errs         []string
		firstAck     = make(chan struct{})
		once         sync.Once
	)
	for i := range 2 {
		lf := filepath.Join(root, fmt.Sprintf("go-%d.log", i))
		logs = append(logs, lf)
		cmd := trustCmd(ctx, exe, nil, "victim", "TRUST_STATE="+state, "TRUST_N="+strconv.Itoa(n), "TRUST_LOG="+lf, "TRUST_CONFIG="+cfg)
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
			for sc.Scan() {
				mu.Lock()
				switch l := sc.Text(); l {
				case "ACK":
					acked++
					once.Do(func() { close(firstAck) })
				case "WROTE":
					wrote++
				default:
					errs = append(errs, "go: "+l)
				}
				mu.Unlock()
			}
			if err := cmd.Wait(); err != nil {
				mu.Lock()
				errs = append(errs, "go worker: "+err.Error())
				mu.Unlock()
			}
		}()
	}
	select {
	case <-firstAck:
	case <-time.After(time.Minute):
		t.Fatalf("no Go victim completed an update: %v", errs)
	}
	for i := range 2 {
		lf := filepath.Join(root, fmt.Sprintf("ts-%d.log", i))
		logs = append(logs, lf)
		cmd := tsseed.Command(t, cfg, state, n, 1, lf)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out, eb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &eb
			err := cmd.Run()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, "ts: "+err.Error()+": "+eb.String())
				return
			}
			acked += n
			wrote += n
		}()
	}
	wg.Wait()
	stdin.Close()
	swaps := ""
	if msc.Scan() {
		swaps = msc.Text()
	}
	mal.Wait()
	rep, err := holdlog.Check(true, logs...)
	if err != nil && len(rep.Overlaps) == 0 {
		t.Errorf("hold logs: %v", err)
	}
	s, err := parseCounter(mustRead(t, state))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Go and reference victims against mallory: %d acknowledged, %d written, final count %d, %d overlaps, mallory %s",
		acked, wrote, s.N, len(rep.Overlaps), swaps)
	if len(errs) != 0 {
		t.Errorf("victims failed: %v", errs)
	}
	if len(rep.Overlaps) != 0 || s.N != acked || wrote != acked || acked != 4*n {
		t.Errorf("exclusion broken: %d overlaps, %d acknowledged, %d written, final %d, want %d", len(rep.Overlaps), acked, wrote, s.N, 4*n)
	}
}
