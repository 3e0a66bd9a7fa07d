package statelock

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// stagingOf lists the state file's staging and temp names in the directory.
func stagingOf(t *testing.T, e *testEnv) []string {
	t.Helper()
	ents, err := os.ReadDir(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range ents {
		n := en.Name()
		if strings.HasSuffix(n, exactfs.ReplacementSuffix) || strings.Contains(n, ".tmp-") {
			out = append(out, n)
		}
	}
	return out
}

func residueNamed(rs []Residue, name string) *Residue {
	for i := range rs {
		if rs[i].Name == name {
			return &rs[i]
		}
	}
	return nil
}

// A writer SIGKILLed at each step of Update's durable write: the staging
// file it leaves (created empty; written and fsynced), which Inspect reports
// as removable, is removed by the next Update; a kill after the rename
// leaves none. (What a sweep removed and kept is reported in Held.Residue:
// TestResidueLookalikesKept.) The state
// file holds the old bytes or the new ones throughout.
func TestKilledWriterResidueRemoved(t *testing.T) {
	for _, c := range []struct {
		hook    string
		residue bool
		want    string // the state file after the kill
	}{
		{hook.StageCreated, true, "v1"},
		{hook.Staged, true, "v1"},
		{hook.Committed, false, "v2"},
	} {
		t.Run(c.hook, func(t *testing.T) {
			e := newEnv(t)
			if err := Update(context.Background(), e.state, func([]byte) ([]byte, error) { return []byte("v1"), nil }, e.opts()...); err != nil {
				t.Fatal(err)
			}
			runKilledAt(t, e, "updatekill", c.hook, "STATELOCK_DATA=v2")
			if got := string(mustRead(t, e.state)); got != c.want {
				t.Fatalf("state after the kill: %q, want %q", got, c.want)
			}
			left := stagingOf(t, e)
			if c.residue != (len(left) == 1) {
				t.Fatalf("residue after a kill at %s: %v", c.hook, left)
			}
			// What status shows before anyone acts on it.
			if st, err := Inspect(e.state, e.opts()...); err != nil {
				t.Fatal(err)
			} else if c.residue {
				r := residueNamed(st.Residue, left[0])
				if r == nil || r.Kind != "staging" || !strings.HasPrefix(r.Note, "removable: no process has it open") {
					t.Fatalf("Inspect's report of %s: %+v", left[0], r)
				}
			}
			// The next Update (its Lock reclaims the dead writer's lock and
			// sweeps) removes the residue and writes.
			if err := Update(context.Background(), e.state, func([]byte) ([]byte, error) { return []byte("v3"), nil }, e.opts()...); err != nil {
				t.Fatal(err)
			}
			if left := stagingOf(t, e); len(left) != 0 {
				t.Fatalf("residue after the next Update: %v", left)
			}
			if got := string(mustRead(t, e.state)); got != "v3" {
				t.Fatalf("state: %q", got)
			}
			assertSteadyState(t, e, true)
		})
	}
}

// Look-alikes carrying a staging or temp name are kept, with the reason: a
// symlink, a hard link, a file another process holds open, the current
// state file under a second name, a TypeScript temp file whose pid is alive.
// Beside them a real orphan staging file and a dead pid's temp file are
// removed.
func TestResidueLookalikesKept(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(e.state, []byte("current"), 0o600); err != nil {
		t.Fatal(err)
	}
	staging := func() string {
		return "." + filepath.Base(e.state) + "." + exactfs.NewUUID() + exactfs.ReplacementSuffix
	}
	at := func(n string) string { return filepath.Join(e.dir, n) }
	write := func(n, data string) {
		if err := os.WriteFile(at(n), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	orphan, symlink, hardlink, open, current := staging(), staging(), staging(), staging(), staging()
	write(orphan, "orphan")
	// An owner record a locker staged for publishing and died before the
	// rename (publishRecord), and one a live locker still holds open.
	lockStaging := "." + filepath.Base(e.lock) + "." + exactfs.NewUUID() + exactfs.StagingSuffix
	write(lockStaging, "{")
	liveLockStaging := "." + filepath.Base(e.sidecar) + "." + exactfs.NewUUID() + exactfs.StagingSuffix
	write(liveLockStaging, "{")
	ls, err := os.OpenFile(at(liveLockStaging), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("x"), 0o600)
	if err := os.Symlink(target, at(symlink)); err != nil {
		t.Fatal(err)
	}
	write(hardlink, "hard")
	if err := os.Link(at(hardlink), filepath.Join(e.dir, "other-name")); err != nil {
		t.Fatal(err)
	}
	write(open, "open")
	if err := os.Link(e.state, at(current)); err != nil {
		t.Fatal(err)
	}
	// A live process holding one staging file open, and a live pid.
	f, err := os.Open(at(open))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	holder := exec.CommandContext(ctx, "sleep", "60")
	holder.ExtraFiles = []*os.File{f}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer func() { holder.Process.Kill(); holder.Wait() }()
	base := filepath.Base(e.state)
	liveTemp := base + ".tmp-" + strconv.Itoa(holder.Process.Pid) + "-" + exactfs.NewUUID()
	deadTemp := base + ".tmp-" + strconv.Itoa(deadPid(t)) + "-" + exactfs.NewUUID()
	write(liveTemp, "live")
	write(deadTemp, "dead")

	h, err := TryLock(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	rep := h.Residue()
	if err := h.Unlock(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		removed bool
		why     string
	}{
		{orphan, true, "removed"},
		{lockStaging, true, "removed"},
		{liveLockStaging, false, "a process has it open"},
		{deadTemp, true, "writer dead"},
		{symlink, false, "symlink"},
		{hardlink, false, "hard-linked"},
		{open, false, "a process has it open"},
		{current, false, "hard-linked"}, // the state file's second name
		{liveTemp, false, "not provably dead"},
	} {
		r := residueNamed(rep, c.name)
		if r == nil {
			t.Errorf("%s: not reported (report: %+v)", c.name, rep)
			continue
		}
		if r.Removed != c.removed || !strings.Contains(r.Note, c.why) {
			t.Errorf("%s: removed %v, %q; want removed %v, %q", c.name, r.Removed, r.Note, c.removed, c.why)
		}
		_, err := os.Lstat(at(c.name))
		if gone := os.IsNotExist(err); gone != c.removed {
			t.Errorf("%s: gone %v, want %v", c.name, gone, c.removed)
		}
	}
	if got := string(mustRead(t, e.state)); got != "current" {
		t.Fatalf("state file: %q", got)
	}
	if got := string(mustRead(t, target)); got != "x" {
		t.Fatalf("symlink target: %q", got)
	}
	// Status names what is kept, and why.
	st, err := Inspect(e.state, e.opts()...)
	if err != nil {
		t.Fatal(err)
	}
	if r := residueNamed(st.Residue, open); r == nil || r.Note != "kept: a process has it open" {
		t.Fatalf("Inspect's report of the open file: %+v", r)
	}
}

// TestSweepOfRemadeDirectory: a state directory removed and made again
// (often with the inode the old one had) is swept on the first hold of
// its lock, as a new directory: the memo of directories already swept must
// not take the new one for the old.
func TestSweepOfRemadeDirectory(t *testing.T) {
	env := newEnv(t)
	parent := t.TempDir()
	for i := range 40 {
		dir := filepath.Join(parent, "state")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		state := filepath.Join(dir, "state.json")
		orphan := ".state.json." + exactfs.NewUUID() + ".replacement"
		if err := os.WriteFile(filepath.Join(dir, orphan), []byte("orphan"), 0o600); err != nil {
			t.Fatal(err)
		}
		h, err := TryLock(state, env.opts()...)
		if err != nil {
			t.Fatal(err)
		}
		rep := h.Residue()
		if err := h.Unlock(); err != nil {
			t.Fatal(err)
		}
		if r := residueNamed(rep, orphan); r == nil || !r.Removed {
			t.Fatalf("round %d: the orphaned staging file of a remade directory was not swept (report %+v)", i, rep)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
}
