//go:build unix

package exactfs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

// unlinkModes runs a test with the exchange path and with the no-replace
// path that filesystems without RENAME_EXCHANGE get.
func unlinkModes(t *testing.T, dir string, f func(t *testing.T, dir string)) {
	for _, mode := range []string{"exchange", "noreplace"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "noreplace" {
				withHook(t, hook.ForceNoExchange, func(string) {})
			}
			sub := filepath.Join(dir, mode)
			must(t, os.Mkdir(sub, 0o700))
			f(t, sub)
		})
	}
}

func testUnlinkExactRemoves(t *testing.T, dir string) {
	unlinkModes(t, dir, func(t *testing.T, dir string) {
		for _, data := range [][]byte{{}, []byte("x"), randBytes(300 << 10)} {
			p := filepath.Join(dir, "f")
			putFile(t, p, data)
			_, id := mustCapture(t, p)
			if err := UnlinkExact(p, id, ".gjc-delete-q"); err != nil {
				t.Fatal(err)
			}
			// No quarantine, no placeholder, nothing.
			wantListing(t, dir)
			wantCode(t, UnlinkExact(p, id, ".gjc-delete-q"), CodeNotFound)
		}
	})
}

// A file that differs from the expected identity in any way that matters
// is kept byte- and inode-identical.
func testUnlinkExactMismatch(t *testing.T, dir string) {
	unlinkModes(t, dir, func(t *testing.T, dir string) {
		for _, tc := range []struct {
			name   string
			change func(t *testing.T, p string)
			code   Code
		}{
			{"size", func(t *testing.T, p string) {
				f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
				f.Write([]byte("+"))
				f.Close()
			}, CodeIdentityMismatch},
			{"mtime", func(t *testing.T, p string) {
				must(t, os.Chtimes(p, time.Now(), time.Now().Add(-time.Hour)))
			}, CodeIdentityMismatch},
			{"bytes with size and mtime restored", func(t *testing.T, p string) {
				fi, _ := os.Stat(p)
				f, _ := os.OpenFile(p, os.O_WRONLY, 0)
				f.WriteAt([]byte("Z"), 3)
				f.Close()
				must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
				if fi2, _ := os.Stat(p); !fi2.ModTime().Equal(fi.ModTime()) || fi2.Size() != fi.Size() {
					t.Fatal("could not restore size and mtime")
				}
			}, CodeIdentityMismatch},
			{"another inode with the same bytes and mtime", func(t *testing.T, p string) {
				fi, _ := os.Stat(p)
				data, _ := os.ReadFile(p)
				plant(t, p, data)
				must(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
			}, CodeIdentityMismatch},
			{"a second hard link", func(t *testing.T, p string) {
				must(t, os.Link(p, p+".link"))
			}, CodeHardLinkUnsupported},
		} {
			t.Run(tc.name, func(t *testing.T) {
				sub := filepath.Join(dir, "m")
				must(t, os.Mkdir(sub, 0o700))
				defer os.RemoveAll(sub)
				p := filepath.Join(sub, "f")
				putFile(t, p, []byte("the original bytes"))
				_, id := mustCapture(t, p)
				tc.change(t, p)
				data, _ := os.ReadFile(p)
				before := snapshotDir(t, sub)
				wantCode(t, UnlinkExact(p, id, "q"), tc.code)
				wantUnchanged(t, sub, before)
				wantFile(t, p, data, 0)
			})
		}
	})
}

// A file captured while it had two links, or linked after, is refused and
// both names keep the bytes.
func testUnlinkExactHardLink(t *testing.T, dir string) {
	p, q := filepath.Join(dir, "f"), filepath.Join(dir, "other-name")
	data := []byte("linked")
	putFile(t, p, data)
	must(t, os.Link(p, q))
	_, id := mustCapture(t, p)
	ino := inode(t, p)
	wantCode(t, UnlinkExact(p, id, "q"), CodeHardLinkUnsupported)
	wantCode(t, UnlinkExact(q, id, "q"), CodeHardLinkUnsupported)
	wantFile(t, p, data, ino)
	wantFile(t, q, data, ino)
	wantListing(t, dir, "f", "other-name")
}

// An existing quarantine name stops the unlink before anything moves, also
// when it appears after the check.
func testUnlinkExactQuarantineCollision(t *testing.T, dir string) {
	unlinkModes(t, dir, func(t *testing.T, dir string) {
		for _, late := range []bool{false, true} {
			p, q := filepath.Join(dir, "f"), filepath.Join(dir, "q")
			putFile(t, p, []byte("target"))
			_, id := mustCapture(t, p)
			mk := func(string) { putFile(t, q, []byte("someone's quarantine")) }
			if late {
				withHookUntil(t, hook.UnlinkChecked, mk, func() {
					wantCode(t, UnlinkExact(p, id, "q"), CodeQuarantineCollision)
				})
			} else {
				mk("")
				wantCode(t, UnlinkExact(p, id, "q"), CodeQuarantineCollision)
			}
			wantFile(t, p, []byte("target"), id.Ino)
			wantFile(t, q, []byte("someone's quarantine"), 0)
			wantListing(t, dir, "f", "q")
			must(t, os.Remove(q))
			must(t, os.Remove(p))
		}
	})
}

// A successor that takes the name between the check and the detach is put
// back exactly: same inode, same bytes, same name, and no residue.
func testUnlinkExactSuccessorSurvives(t *testing.T, dir string) {
	unlinkModes(t, dir, func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		putFile(t, p, []byte("the expected file"))
		_, id := mustCapture(t, p)
		succ := []byte("the successor's lock")
		var ino uint64
		withHookUntil(t, hook.UnlinkChecked, func(string) { ino = plant(t, p, succ) }, func() {
			wantCode(t, UnlinkExact(p, id, ".gjc-delete-q"), CodeIdentityMismatch)
		})
		wantFile(t, p, succ, ino)
		wantListing(t, dir, "f")
	})
}

// A successor created at the name after the expected file was detached is
// left alone, and the unlink of the expected file completes.
func testUnlinkExactSuccessorAfterDetach(t *testing.T, dir string) {
	unlinkModes(t, dir, func(t *testing.T, dir string) {
		p := filepath.Join(dir, "f")
		putFile(t, p, []byte("the expected file"))
		_, id := mustCapture(t, p)
		succ := []byte("the successor")
		var ino uint64
		withHookUntil(t, hook.UnlinkDetached, func(string) { ino = plant(t, p, succ) }, func() {
			if err := UnlinkExact(p, id, ".gjc-delete-q"); err != nil {
				t.Fatal(err)
			}
		})
		wantFile(t, p, succ, ino)
		wantListing(t, dir, "f")
	})
}

// A parent directory swapped for a symlink after the identity was captured
// stops the walk: nothing is removed, neither at the symlink's target nor
// the symlink.
func testUnlinkExactParentSwapped(t *testing.T, dir string) {
	sub := filepath.Join(dir, "sub")
	must(t, os.Mkdir(sub, 0o700))
	p := filepath.Join(sub, "f")
	data := []byte("keep me")
	putFile(t, p, data)
	_, id := mustCapture(t, p)
	must(t, os.Rename(sub, filepath.Join(dir, "moved")))
	must(t, os.Symlink("moved", sub))
	before := snapshotDir(t, dir)
	wantCode(t, UnlinkExact(p, id, "q"), CodeReparsePoint)
	wantUnchanged(t, dir, before)
	wantFile(t, filepath.Join(dir, "moved", "f"), data, id.Ino)
}

// An invalid quarantine name is refused before anything is touched.
func testUnlinkExactInvalidQuarantine(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	putFile(t, p, []byte("x"))
	_, id := mustCapture(t, p)
	for _, q := range []string{"", ".", "..", "a/b", "f", "q\x00"} {
		wantCode(t, UnlinkExact(p, id, q), CodeInvalidRequest)
	}
	wantFile(t, p, []byte("x"), id.Ino)
}

// Dir.UnlinkExact works beneath the directory it is bound to, even after the
// directory's path was renamed.
func testDirUnlinkExact(t *testing.T, dir string) {
	sub := filepath.Join(dir, "sub")
	must(t, os.Mkdir(sub, 0o700))
	putFile(t, filepath.Join(sub, "f"), []byte("x"))
	d, err := OpenDir(sub)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, id, err := d.Capture("f")
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.Rename(sub, filepath.Join(dir, "renamed")))
	if err := d.UnlinkExact("f", id, "q"); err != nil {
		t.Fatal(err)
	}
	wantListing(t, filepath.Join(dir, "renamed"))
}

// Two exact unlinks of the same file at once: the second passes its check
// before the first detaches the file, and exchanges the first one's
// placeholder out of the name after the file is deleted. The first must not
// give up on its placeholder (it would stay at the name for good, an empty
// file where a lock record was); the second finds the placeholder is not
// the file it expected and puts it back; the first then removes it.
func testUnlinkExactConcurrentSameFile(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	putFile(t, p, []byte("a released lock record"))
	_, id := mustCapture(t, p)

	// As two processes would: no in-process turn-taking.
	withHook(t, hookNoSerialize, func(string) {})
	r2checked, r1deleted, r2detached, r1returned := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	var checks, detaches atomic.Int32
	withHook(t, hook.UnlinkChecked, func(string) {
		if checks.Add(1) == 1 { // the second unlinker, started first
			close(r2checked)
			<-r1deleted
		}
	})
	withHook(t, hook.UnlinkDeleted, func(string) { // only the first gets here
		close(r1deleted)
		<-r2detached
	})
	withHook(t, hook.UnlinkDetached, func(string) {
		if detaches.Add(1) == 2 { // the second, holding the first's placeholder
			close(r2detached)
			select {
			case <-r1returned:
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	r2 := make(chan error, 1)
	go func() { r2 <- UnlinkExact(p, id, "q2") }()
	<-r2checked
	r1 := make(chan error, 1)
	go func() {
		err := UnlinkExact(p, id, "q1")
		close(r1returned)
		r1 <- err
	}()
	var errs [2]error
	for i, c := range []chan error{r1, r2} {
		select {
		case errs[i] = <-c:
		case <-time.After(10 * time.Second):
			t.Fatal("an unlink did not return")
		}
	}
	if errs[0] != nil {
		t.Fatalf("first unlink: %v", errs[0])
	}
	wantCode(t, errs[1], CodeIdentityMismatch)
	wantListing(t, dir)
}

// Several exact unlinks of the same file, racing freely: exactly one
// removes it, the others say it is gone or not theirs, and nothing is left.
func testUnlinkExactRace(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	for round := range 100 {
		putFile(t, p, []byte("record "+strconv.Itoa(round)))
		_, id := mustCapture(t, p)
		errs := make(chan error, 4)
		for g := range 4 {
			go func() { errs <- UnlinkExact(p, id, ".gjc-delete-q"+strconv.Itoa(g)) }()
		}
		done := 0
		for range 4 {
			switch err := <-errs; CodeOf(err) {
			case "":
				done++
			case CodeIdentityMismatch, CodeNotFound, CodeChangedDuringRead:
				// The losers: the file was gone, another object was there,
				// or the winner unlinked it while the loser read it.
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if done != 1 {
			t.Fatalf("round %d: %d unlinks reported success", round, done)
		}
		wantListing(t, dir)
	}
}

// Three exact unlinks of one file in three processes: the winner deletes
// it; one loser exchanges the winner's placeholder out, a second loser
// exchanges the first loser's placeholder out. The losers must swap back in
// nesting order (the first waits for its own placeholder to return to the
// name), or the placeholders end up permuted and one stays at the name.
func testUnlinkExactThreeWay(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	putFile(t, p, []byte("a released lock record"))
	_, id := mustCapture(t, p)
	withHook(t, hookNoSerialize, func(string) {})

	l1checked, l2checked := make(chan struct{}), make(chan struct{})
	l1go, l2go, l2exchanged, wrelease := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
	var checks, detaches atomic.Int32
	withHook(t, hook.UnlinkChecked, func(string) {
		switch checks.Add(1) {
		case 1:
			close(l1checked)
			<-l1go
		case 2:
			close(l2checked)
			<-l2go
		}
	})
	withHook(t, hook.UnlinkDeleted, func(string) { // the winner
		close(l1go)
		<-wrelease
	})
	withHook(t, hook.UnlinkDetached, func(string) {
		switch detaches.Add(1) {
		case 2: // the first loser holds the winner's placeholder
			close(l2go)
			<-l2exchanged
		case 3: // the second loser holds the first loser's placeholder
			close(l2exchanged)
			close(wrelease)
			time.Sleep(100 * time.Millisecond) // the first loser tries to swap back now
		}
	})
	run := func(q string) chan error {
		c := make(chan error, 1)
		go func() { c <- UnlinkExact(p, id, q) }()
		return c
	}
	l1 := run("q1")
	<-l1checked
	l2 := run("q2")
	<-l2checked
	w := run("qw")
	var errs [3]error
	for i, c := range []chan error{w, l1, l2} {
		select {
		case errs[i] = <-c:
		case <-time.After(10 * time.Second):
			t.Fatal("an unlink did not return")
		}
	}
	if errs[0] != nil {
		t.Fatalf("winner: %v", errs[0])
	}
	wantCode(t, errs[1], CodeIdentityMismatch)
	wantCode(t, errs[2], CodeIdentityMismatch)
	wantListing(t, dir)
}

// A successor planted before the detach is detached by mistake; a second
// successor then replaces the placeholder at the name. The first cannot go
// back to its name: it is reported at the quarantine name (restore_failed)
// at once, not after waiting for a placeholder that no longer exists.
func testUnlinkExactTwoSuccessors(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	putFile(t, p, []byte("the expected file"))
	_, id := mustCapture(t, p)
	var first, second uint64
	withHook(t, hook.UnlinkChecked, func(string) { first = plant(t, p, []byte("first successor")) })
	withHook(t, hook.UnlinkDetached, func(string) { second = plant(t, p, []byte("second successor")) })
	start := time.Now()
	err := UnlinkExact(p, id, "q")
	wantCode(t, err, CodeRestoreFailed)
	if d := time.Since(start); d > placeholderWait/2 {
		t.Fatalf("took %v: waited for a placeholder that had no name left", d)
	}
	var e *Error
	if !errors.As(err, &e) || len(e.Residue) != 1 || e.Residue[0] != filepath.Join(dir, "q") {
		t.Fatalf("residue %v, want the quarantine name", e.Residue)
	}
	wantFile(t, p, []byte("second successor"), second)
	wantFile(t, filepath.Join(dir, "q"), []byte("first successor"), first)
	wantListing(t, dir, "f", "q")
}

func init() {
	// unlink-crash <path> <quarantine>: UnlinkExact killed right after the
	// detach.
	children["unlink-crash"] = func(args []string) error {
		_, id, err := Capture(args[0])
		if err != nil {
			return err
		}
		killSelfAt(hook.UnlinkDetached)
		return UnlinkExact(args[0], id, args[1])
	}
}

// An exact unlink killed right after the detach loses no byte: the file is
// whole at the quarantine name, and the name holds at most the empty
// placeholder (exchange path) or nothing (no-replace path). Never a torn or
// partly deleted file.
func testUnlinkExactCrash(t *testing.T, dir string) {
	p := filepath.Join(dir, "f")
	data := randBytes(7000)
	putFile(t, p, data)
	ino := inode(t, p)
	runChild(t, "unlink-crash", p, ".gjc-delete-q")
	wantFile(t, filepath.Join(dir, ".gjc-delete-q"), data, ino)
	st := lstatT(t, p)
	if st.Size != 0 || st.Nlink != 1 || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		t.Fatalf("the name holds %+v, want the empty placeholder", st)
	}
	wantListing(t, dir, ".gjc-delete-q", "f")
}

func init() {
	// unlink-once <path> <identity> <quarantine>: wait for stdin to close,
	// then UnlinkExact once and print the outcome code ("ok" for success).
	children["unlink-once"] = func(args []string) error {
		id, err := ParseIdentity(args[1])
		if err != nil {
			return err
		}
		io.Copy(io.Discard, os.Stdin)
		err = UnlinkExact(args[0], id, args[2])
		code := string(CodeOf(err))
		if err == nil {
			code = "ok"
		}
		fmt.Println(code)
		os.Exit(0)
		return nil
	}
}

// Two processes unlink the same file at once, with no in-process turn
// taking between them: exactly one removes it, the other is told it is
// gone or not its file, and nothing is left behind, round after round.
//
// Not in the suite: each round starts two processes, which is slow under
// -race, and the filesystem adds nothing the suite does not test.
func TestUnlinkExactTwoProcesses(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	outcomes := map[string]int{}
	for round := range 20 {
		putFile(t, p, []byte("record "+strconv.Itoa(round)))
		_, id := mustCapture(t, p)
		var cmds []*exec.Cmd
		var outs []*bytes.Buffer
		var gates []io.WriteCloser
		for i := range 2 {
			enc, _ := json.Marshal([]string{p, id.String(), ".gjc-delete-q" + strconv.Itoa(i)})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=unlink-once", childArgsEnv+"="+string(enc))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			gate, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			must(t, cmd.Start())
			cmds, outs, gates = append(cmds, cmd), append(outs, &out), append(gates, gate)
		}
		for _, g := range gates {
			g.Close() // both start their unlink now
		}
		ok := 0
		for i, cmd := range cmds {
			if err := cmd.Wait(); err != nil {
				t.Fatalf("round %d: child: %v: %s", round, err, outs[i])
			}
			code := strings.TrimSpace(outs[i].String())
			outcomes[code]++
			switch code {
			case "ok":
				ok++
			case string(CodeIdentityMismatch), string(CodeNotFound), string(CodeChangedDuringRead):
			default:
				t.Fatalf("round %d: outcome %q", round, code)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d processes removed the file", round, ok)
		}
		wantListing(t, dir)
	}
	t.Logf("outcomes: %v", outcomes)
}
