//go:build unix

package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// A successor that takes the lock name after a stale record was judged and
// before it is unlinked survives, byte- and inode-identical; the reclaimer
// goes on waiting.
func TestLeaseReclaimSparesSuccessor(t *testing.T) {
	dir := locksDir(t)
	now := time.Now().UnixMilli()
	plantRecord(t, dir, "job", LeaseRecord{AttemptID: "dead", Pid: os.Getpid(), BootID: "another-boot",
		ProcessStartID: "p", CreatedAt: now - 1000, HeartbeatAt: now - 1000, LeaseExpiresAt: now - 1})
	lock := filepath.Join(dir, "job.lock")
	successor := LeaseRecord{AttemptID: "successor", Pid: os.Getpid(), BootID: bootID(), ProcessStartID: "q",
		CreatedAt: now, HeartbeatAt: now, LeaseExpiresAt: now + 60_000}.Marshal()
	restore := hook.Set(hook.UnlinkChecked, hook.Once(func(string) {
		// The successor replaces the judged record at the name.
		tmp := lock + ".tmp"
		os.WriteFile(tmp, successor, 0o600)
		os.Rename(tmp, lock)
	}))
	defer restore()
	_, err := AcquireLease(context.Background(), dir, "job", WaitBudget(200*time.Millisecond))
	if !errors.Is(err, ErrLeaseBusy) {
		t.Fatalf("acquire: %v, want busy (the successor is live)", err)
	}
	ino := inode(t, lock)
	if !bytes.Equal(readFile(t, lock), successor) {
		t.Fatalf("successor's record changed: %s", readFile(t, lock))
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Fatalf("residue beside the successor: %v", got)
	}
	if inode(t, lock) != ino {
		t.Fatal("successor replaced")
	}
}

// A successor planted while RemoveExpected is between its check and its
// unlink survives; the remove reports identity_mismatch.
func TestRemoveExpectedSparesSuccessor(t *testing.T) {
	s := newStore(t)
	id, err := s.Publish("f", []byte("mine"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(s.Path(), "f")
	restore := hook.Set(hook.UnlinkChecked, hook.Once(func(string) {
		os.WriteFile(p+".new", []byte("successor"), 0o600)
		os.Rename(p+".new", p)
	}))
	defer restore()
	ino0 := inode(t, p)
	err = s.RemoveExpected("f", id)
	if !errors.Is(err, exactfs.ErrIdentityMismatch) {
		t.Fatalf("remove: %v", err)
	}
	if string(readFile(t, p)) != "successor" || inode(t, p) == ino0 {
		t.Fatal("the successor was removed or replaced")
	}
}

// A writer that replaces the file after ReplaceExpected checked it and
// before the exchange keeps its file: exactfs swaps it back.
func TestReplaceExpectedSparesConcurrentWriter(t *testing.T) {
	s := newStore(t)
	id, err := s.Publish("f", []byte("v1"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(s.Path(), "f")
	restore := hook.Set(hook.ReplaceChecked, hook.Once(func(string) {
		os.WriteFile(p+".new", []byte("theirs"), 0o600)
		os.Rename(p+".new", p)
	}))
	defer restore()
	theirs := func() uint64 { return inode(t, p) }
	_, err = s.ReplaceExpected("f", []byte("mine"), id)
	if !errors.Is(err, exactfs.ErrIdentityMismatch) {
		t.Fatalf("replace: %v", err)
	}
	ino := theirs()
	if string(readFile(t, p)) != "theirs" {
		t.Fatalf("concurrent writer's bytes lost: %q", readFile(t, p))
	}
	if got := entries(t, s.Path()); len(got) != 1 || inode(t, p) != ino {
		t.Fatalf("residue: %v", got)
	}
}

// Compare-and-swap increments from several processes lose no update.
func TestCASCounterAcrossProcesses(t *testing.T) {
	s := newStore(t)
	if _, err := s.Publish("counter", []byte("0")); err != nil {
		t.Fatal(err)
	}
	const procs, each = 4, 25
	var cmds []*execCmd
	for i := 0; i < procs; i++ {
		cmd := helperCommand(t, "cas-inc", "STORE_DIR="+s.Path(), fmt.Sprintf("STORE_N=%d", each))
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
	if got := string(readFile(t, filepath.Join(s.Path(), "counter"))); got != strconv.Itoa(procs*each) {
		t.Fatalf("counter %s, want %d", got, procs*each)
	}
	if got := entries(t, s.Path()); len(got) != 1 {
		t.Fatalf("residue: %v", got)
	}
}

// helperCASInc increments the counter file STORE_N times by
// compare-and-swap, retrying on identity_mismatch.
func helperCASInc() error {
	s, err := Open(os.Getenv("STORE_DIR"))
	if err != nil {
		return err
	}
	defer s.Close()
	n, _ := strconv.Atoi(os.Getenv("STORE_N"))
	for i := 0; i < n; {
		b, id, err := s.ReadExpected("counter")
		if errors.Is(err, exactfs.ErrChangedDuringRead) {
			continue
		}
		if err != nil {
			return err
		}
		v, err := strconv.Atoi(string(b))
		if err != nil {
			return err
		}
		_, err = s.ReplaceExpected("counter", []byte(strconv.Itoa(v+1)), id)
		switch {
		case err == nil:
			i++
		// Refusals: nothing was replaced; read again. (hard_link_unsupported
		// is how an exactfs without the nlink-0 check reports a
		// predecessor unlinked by another writer while it was checked.)
		case errors.Is(err, exactfs.ErrIdentityMismatch), errors.Is(err, exactfs.ErrNotFound),
			errors.Is(err, exactfs.ErrChangedDuringRead), errors.Is(err, exactfs.ErrHardLinkUnsupported):
			if os.Getenv("STORE_DEBUG") != "" {
				fmt.Fprintln(os.Stderr, "RETRY", err)
			}
		default:
			return err
		}
	}
	return nil
}

func init() { helpers["cas-inc"] = helperCASInc }

// A successor that takes the name right after a write committed does not
// turn the commit into an error (a compare-and-swap loop would apply its
// update twice), and the store does not try to verify the successor.
func TestWriteSupersededAtOnceIsSuccess(t *testing.T) {
	for _, op := range []string{"publish", "replace", "replace-expected"} {
		t.Run(op, func(t *testing.T) {
			s := newStore(t)
			p := filepath.Join(s.Path(), "f")
			id, err := s.Publish("f0", []byte("old"))
			if err != nil {
				t.Fatal(err)
			}
			if op != "publish" {
				os.Rename(filepath.Join(s.Path(), "f0"), p)
			}
			restore := hook.Set(hook.Committed, hook.Once(func(string) {
				os.WriteFile(p+".succ", []byte("successor"), 0o644)
				os.Rename(p+".succ", p)
			}))
			defer restore()
			switch op {
			case "publish":
				_, err = s.Publish("f", []byte("mine"))
			case "replace":
				_, err = s.Replace("f", []byte("mine"))
			default:
				_, err = s.ReplaceExpected("f", []byte("mine"), id)
			}
			if err != nil {
				t.Fatalf("%s superseded right after its commit: %v", op, err)
			}
			if got := string(readFile(t, p)); got != "successor" {
				t.Fatalf("f = %q", got)
			}
		})
	}
}
