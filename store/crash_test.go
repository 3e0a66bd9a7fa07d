//go:build linux && !exactfs_portable

package store

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/internal/hook"
)

// runCrash runs one store mutation in a child that SIGKILLs itself at hook.
func runCrash(t *testing.T, dir, op, hookSpec, data string) {
	t.Helper()
	runCrashAt(t, dir, op, hookSpec, "STORE_DATA="+data)
}

// A child killed at each step of Publish, Replace and ReplaceExpected leaves
// the destination whole (old or new bytes), and the reaper then removes
// exactly the residue: planted look-alikes it cannot prove inert survive.
func TestCrashAtEachStepThenReap(t *testing.T) {
	const oldData, newData = "old bytes", "new bytes, longer than the old ones"
	for _, c := range []struct {
		op, hook     string
		wantResidue  bool
		wantNewBytes bool // a commit happened before the kill
	}{
		{"publish", hook.Staged, true, false},
		{"publish", hook.StoreBeforeCommit, true, false},
		{"publish", hook.StoreAfterCommit, false, true},
		{"replace", hook.Staged, true, false},
		{"replace", hook.StoreAfterCommit, false, true},
		{"replace-expected", hook.ReplaceChecked, true, false},
		{"replace-expected", hook.StoreBeforeCommit, true, false},
		// After the exchange, before the predecessor is deleted: the
		// staging name holds the old bytes.
		{"replace-expected", hook.ReplaceChecked + ">" + hook.CaptureRead, true, true},
		{"replace-expected", hook.StoreAfterCommit, false, true},
	} {
		t.Run(c.op+"@"+c.hook, func(t *testing.T) {
			s := newStore(t)
			dest := filepath.Join(s.Path(), "dest")
			if c.op != "publish" {
				if _, err := s.Publish("dest", []byte(oldData)); err != nil {
					t.Fatal(err)
				}
			}
			runCrash(t, s.Path(), c.op, c.hook, newData)

			got, err := os.ReadFile(dest)
			switch {
			case c.wantNewBytes:
				if string(got) != newData {
					t.Fatalf("dest = %q, %v; want the new bytes", got, err)
				}
			case c.op == "publish":
				if !os.IsNotExist(err) {
					t.Fatalf("dest = %q, %v; want absent", got, err)
				}
			default:
				if string(got) != oldData {
					t.Fatalf("dest = %q, %v; want the old bytes", got, err)
				}
			}
			var residue []string
			for _, n := range entries(t, s.Path()) {
				if isPrivateName(filepath.Base(n)) {
					residue = append(residue, n)
				}
			}
			if c.wantResidue != (len(residue) > 0) {
				t.Fatalf("residue %v, want some: %v", residue, c.wantResidue)
			}

			// Look-alikes the reaper must keep, and one genuine empty
			// placeholder it must remove.
			victim := filepath.Join(t.TempDir(), "victim")
			os.WriteFile(victim, []byte("victim"), 0o644)
			user := filepath.Join(s.Path(), "user")
			os.WriteFile(user, []byte("user data"), 0o600)
			empty := filepath.Join(s.Path(), "empty")
			os.WriteFile(empty, nil, 0o600)
			plant := map[string]func(p string) error{
				exactfs.PlaceholderPrefix + "symlink":                func(p string) error { return os.Symlink(victim, p) },
				exactfs.PlaceholderPrefix + "hardlink":               func(p string) error { return os.Link(empty, p) },
				exactfs.PlaceholderPrefix + "full":                   func(p string) error { return os.WriteFile(p, []byte("not empty"), 0o600) },
				".user.0b9d2e7c-3d5e-4f7a-8b9c-0d1e2f3a4b5c.staging": func(p string) error { return os.Link(user, p) },
				StoreRetirePrefix + "dir":                            func(p string) error { return os.Mkdir(p, 0o700) },
			}
			for n, f := range plant {
				if err := f(filepath.Join(s.Path(), n)); err != nil {
					t.Fatal(err)
				}
			}
			openName := ".open.1b9d2e7c-3d5e-4f7a-8b9c-0d1e2f3a4b5c.replacement"
			held, err := os.OpenFile(filepath.Join(s.Path(), openName), os.O_CREATE|os.O_WRONLY, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			held.Write([]byte("a live writer's staged bytes"))
			defer held.Close()
			genuine := exactfs.PlaceholderPrefix + "fd01-2a"
			os.WriteFile(filepath.Join(s.Path(), genuine), nil, 0o600)

			before := entries(t, s.Path())
			rep, err := s.Reap(ReapMinAge(0))
			if err != nil {
				t.Fatal(err)
			}
			wantRemoved := append(slices.Clone(residue), genuine)
			slices.Sort(wantRemoved)
			removed := slices.Sorted(slices.Values(rep.Removed))
			if !slices.Equal(removed, wantRemoved) {
				t.Fatalf("removed %v, want exactly %v; kept %+v", removed, wantRemoved, rep.Kept)
			}
			var kept []string
			for _, k := range rep.Kept {
				kept = append(kept, k.Path)
				if k.Reason == "" {
					t.Fatalf("kept %s without a reason", k.Path)
				}
			}
			slices.Sort(kept)
			wantKept := append(slices.Collect(func(yield func(string) bool) {
				for n := range plant {
					if !yield(n) {
						return
					}
				}
			}), openName)
			slices.Sort(wantKept)
			if !slices.Equal(kept, wantKept) {
				t.Fatalf("kept %+v, want %v", rep.Kept, wantKept)
			}
			after := entries(t, s.Path())
			wantAfter := slices.DeleteFunc(slices.Clone(before), func(n string) bool { return slices.Contains(wantRemoved, n) })
			if !slices.Equal(after, wantAfter) {
				t.Fatalf("after reap %v, want %v", after, wantAfter)
			}
			if string(readFile(t, victim)) != "victim" || mode(t, victim) != 0o644 || string(readFile(t, user)) != "user data" {
				t.Fatal("the reaper touched data that is not residue")
			}
			if got, _ := os.ReadFile(dest); c.op != "publish" && !c.wantNewBytes && string(got) != oldData {
				t.Fatalf("dest changed by the reaper: %q", got)
			}
			for _, k := range rep.Kept {
				if strings.Contains(k.Path, "open") && !strings.Contains(k.Reason, "open") {
					t.Fatalf("open staging file kept for the wrong reason: %s", k.Reason)
				}
			}
		})
	}
}

func TestReapAgeThresholdAndSubdirectories(t *testing.T) {
	s := newStore(t)
	if err := s.Mkdir("a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Mkdir("a/b"); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(s.Path(), "a", "b", exactfs.PlaceholderPrefix+"1-2")
	os.WriteFile(deep, nil, 0o600)
	staging := filepath.Join(s.Path(), "a", ".x.2b9d2e7c-3d5e-4f7a-8b9c-0d1e2f3a4b5c.staging")
	os.WriteFile(staging, []byte("abandoned"), 0o600)
	for _, opts := range [][]ReapOption{nil, {ReapMinAge(time.Hour)}} {
		rep, err := s.Reap(opts...) // default: 15 minutes
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Removed) != 0 || len(rep.Kept) != 2 || !strings.Contains(rep.Kept[0].Reason, "too recent") {
			t.Fatalf("fresh residue: %+v", rep)
		}
	}
	// An old mtime alone does not make a file old: a rename (ctime) counts.
	old := time.Now().Add(-16 * time.Minute)
	os.Chtimes(deep, old, old)
	if rep, _ := s.Reap(ReapMinAge(time.Minute)); len(rep.Removed) != 0 {
		t.Fatalf("removed a file renamed or changed just now: %+v", rep)
	}
	time.Sleep(100 * time.Millisecond)
	rep, err := s.Reap(ReapMinAge(50 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Removed) != 2 || len(rep.Kept) != 0 {
		t.Fatalf("old residue: %+v", rep)
	}
	for _, p := range []string{deep, staging} {
		if _, err := os.Lstat(p); !os.IsNotExist(err) {
			t.Fatalf("%s survived", p)
		}
	}
}

// A reaper SIGKILLed in the middle of an exact unlink, after it detached
// an abandoned staging file to its retire name and before it deleted it
// (the reference's scenario 197): the next Reap removes the detached bytes
// once nobody has them open, instead of keeping them as "not empty" for
// good; while someone holds them open, they are kept with that reason.
func TestReaperKilledMidUnlink(t *testing.T) {
	s := newStore(t)
	staged := "." + "dest." + exactfs.NewUUID() + exactfs.ReplacementSuffix
	if err := os.WriteFile(filepath.Join(s.Path(), staged), []byte("bytes of a write that never committed"), 0o600); err != nil {
		t.Fatal(err)
	}
	runCrashAt(t, s.Path(), "reap", hook.UnlinkDetached)
	var retired string
	for _, n := range entries(t, s.Path()) {
		if strings.HasPrefix(filepath.Base(n), StoreRetirePrefix) {
			retired = filepath.Base(n)
		}
	}
	if retired == "" {
		t.Fatalf("the killed reaper left no retired file: %v", entries(t, s.Path()))
	}
	// Someone has the detached bytes open: kept, and the report says why.
	f, err := os.OpenFile(filepath.Join(s.Path(), retired), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Reap(ReapMinAge(0))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(r.Kept, func(k Kept) bool { return k.Path == retired }); i < 0 || !strings.Contains(r.Kept[i].Reason, "not provably gone") {
		t.Fatalf("reap while the retired file is open: %+v, want it kept because it is open", r)
	}
	r, err = s.Reap(ReapMinAge(0))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.Removed, retired) {
		t.Fatalf("second reap: %+v, want %s removed", r, retired)
	}
	for _, n := range entries(t, s.Path()) {
		if isPrivateName(filepath.Base(n)) {
			t.Fatalf("residue left after the second reap: %s", n)
		}
	}
}
