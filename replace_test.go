//go:build unix

package exactfs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

func testReplaceExpected(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	old := randBytes(1000)
	putFile(t, p, old)
	must(t, os.Chmod(p, 0o640))
	_, id := mustCapture(t, p)
	next := randBytes(2000)
	nid, err := ReplaceExpected(p, next, id)
	if err != nil {
		t.Fatal(err)
	}
	wantFile(t, p, next, nid.Ino)
	wantListing(t, dir, "f")
	_, got := mustCapture(t, p)
	if got != nid {
		t.Fatalf("ReplaceExpected returned %v, the file is %v: %s", nid, got, nid.diff(got))
	}
	if got.Mode.Perm() != 0o640 {
		t.Fatalf("the replacement has mode %v; it keeps the predecessor's 0640", got.Mode)
	}
	// The returned identity is the next expectation: a chain of CAS.
	for i := range 3 {
		b := []byte{byte(i)}
		if nid, err = ReplaceExpected(p, b, nid); err != nil {
			t.Fatal(err)
		}
		wantFile(t, p, b, nid.Ino)
	}
	// A stale expectation changes nothing.
	data, _ := os.ReadFile(p)
	ino := inode(t, p)
	for _, stale := range []Identity{id, got} {
		_, err := ReplaceExpected(p, []byte("lost update"), stale)
		wantCode(t, err, CodeIdentityMismatch)
		wantFile(t, p, data, ino)
	}
	wantListing(t, dir, "f")
}

// Every field of the expected identity counts, ctime and link count
// included; a hard-linked file is refused.
func testReplaceExpectedMismatch(t *testing.T, dir string) {
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string)
		code   Code
	}{
		{"bytes with size and mtime restored", func(t *testing.T, p string) {
			fi, _ := os.Stat(p)
			f, _ := os.OpenFile(p, os.O_WRONLY, 0)
			f.WriteAt([]byte("Z"), 0)
			f.Close()
			must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
		}, CodeIdentityMismatch},
		{"mode (ctime)", func(t *testing.T, p string) { must(t, os.Chmod(p, 0o644)) }, CodeIdentityMismatch},
		{"another inode", func(t *testing.T, p string) { plant(t, p, []byte("original")) }, CodeIdentityMismatch},
		{"hard link", func(t *testing.T, p string) { must(t, os.Link(p, p+".2")) }, CodeHardLinkUnsupported},
		{"gone", func(t *testing.T, p string) { must(t, os.Remove(p)) }, CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sub := filepath.Join(dir, "m")
			must(t, os.Mkdir(sub, 0o700))
			defer os.RemoveAll(sub)
			p := filepath.Join(sub, "f")
			putFile(t, p, []byte("original"))
			_, id := mustCapture(t, p)
			time.Sleep(2 * time.Millisecond) // a coarse clock must still tick for the ctime case
			tc.change(t, p)
			before := snapshotDir(t, sub)
			_, err := ReplaceExpected(p, []byte("new"), id)
			wantCode(t, err, tc.code)
			wantUnchanged(t, sub, before)
		})
	}
}

// A successor that takes the name after the check and before the exchange
// is swapped back: it keeps its name, inode and bytes, and nothing of ours
// remains.
func testReplaceExpectedSuccessorSurvives(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	putFile(t, p, []byte("predecessor"))
	_, id := mustCapture(t, p)
	succ := []byte("another writer's successor")
	var ino uint64
	withHookUntil(t, hook.ReplaceChecked, func(string) { ino = plant(t, p, succ) }, func() {
		_, err := ReplaceExpected(p, []byte("ours"), id)
		wantCode(t, err, CodeIdentityMismatch)
	})
	wantFile(t, p, succ, ino)
	wantListing(t, dir, "f")
}

// The name is never missing during a replace: readers that open it in a
// loop never get ENOENT and always see one whole version.
func testReplaceExpectedNeverMissing(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	version := func(i int) []byte { return bytes.Repeat([]byte{'a' + byte(i%26)}, 4096+i%7) }
	putFile(t, p, version(0))
	_, id := mustCapture(t, p)
	stop := make(chan struct{})
	var reads, missing, torn atomic.Int64
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := os.ReadFile(p)
				reads.Add(1)
				switch {
				case errors.Is(err, fs.ErrNotExist):
					missing.Add(1)
				case err != nil || len(got) < 4096 || !bytes.Equal(got, bytes.Repeat(got[:1], len(got))):
					torn.Add(1)
				}
			}
		})
	}
	var err error
	for i := 1; i <= 500; i++ {
		if id, err = ReplaceExpected(p, version(i), id); err != nil {
			break
		}
	}
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if missing.Load() != 0 || torn.Load() != 0 {
		t.Fatalf("%d of %d reads found no file and %d a torn one", missing.Load(), reads.Load(), torn.Load())
	}
	if reads.Load() < 500 {
		t.Fatalf("only %d reads during 500 replaces", reads.Load())
	}
	wantListing(t, dir, "f")
}

// After a replace no name in the directory holds the predecessor's bytes.
func testReplaceExpectedPredecessorGone(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	secret := randBytes(777)
	putFile(t, p, secret)
	_, id := mustCapture(t, p)
	if _, err := ReplaceExpected(p, []byte("public"), id); err != nil {
		t.Fatal(err)
	}
	filepath.Walk(dir, func(q string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(q); bytes.Contains(b, secret) {
				t.Errorf("%s still holds the predecessor's bytes", q)
			}
		}
		return nil
	})
}

// Compare-and-swap races: several writers with the same expectation, and
// an exact unlink of the same version; exactly one wins, the others change
// nothing, and the name ends with the winner's bytes (or nothing, if the
// unlink won), with no residue.
func testReplaceExpectedRace(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	for round := range 50 {
		putFile(t, p, []byte("version 0 of round "+strconv.Itoa(round)))
		_, id := mustCapture(t, p)
		type result struct {
			who  int
			data []byte
			err  error
		}
		results := make(chan result, 5)
		for g := range 4 {
			go func() {
				data := []byte("writer " + strconv.Itoa(g) + " round " + strconv.Itoa(round))
				_, err := ReplaceExpected(p, data, id)
				results <- result{g, data, err}
			}()
		}
		go func() { results <- result{-1, nil, UnlinkExact(p, id, ".gjc-delete-q")} }()
		var winners []result
		for range 5 {
			r := <-results
			switch CodeOf(r.err) {
			case "":
				winners = append(winners, r)
			case CodeIdentityMismatch, CodeNotFound:
			default:
				t.Fatalf("round %d, writer %d: %v", round, r.who, r.err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d winners", round, len(winners))
		}
		if winners[0].who < 0 {
			wantListing(t, dir)
			continue
		}
		wantFile(t, p, winners[0].data, 0)
		wantListing(t, dir, "f")
	}
}

func init() {
	// replace-crash <path>: ReplaceExpected killed after staging, before
	// the exchange.
	children["replace-crash"] = func(args []string) error {
		_, id, err := Capture(args[0])
		if err != nil {
			return err
		}
		killSelfAt(hook.Staged)
		_, err = ReplaceExpected(args[0], []byte("never"), id)
		return err
	}
}

// A compare-and-swap killed before the exchange leaves the predecessor
// whole and only recognizable staging residue.
func testReplaceExpectedCrash(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	old := randBytes(5000)
	putFile(t, p, old)
	ino := inode(t, p)
	runChild(t, "replace-crash", p)
	wantFile(t, p, old, ino)
	for _, n := range listing(t, dir) {
		if dest, ok := StagingTarget(n); n != "f" && (!ok || dest != "f") {
			t.Fatalf("residue %q is not recognizable as staging of f", n)
		}
	}
}
