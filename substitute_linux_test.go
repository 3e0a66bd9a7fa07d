//go:build linux

package exactfs

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/exactfs/exactfs/internal/hook"
)

// Tests of the proved commit (issue 23 item 1, reference scenario #267):
// a file another process renames over a write's private staging name is
// never committed as the write's success.

// stagingOf returns the private staging name of base in dir (there must be
// exactly one).
func stagingOf(t *testing.T, dir, base string) string {
	t.Helper()
	var found []string
	for _, n := range listing(t, dir) {
		if dest, ok := StagingTarget(n); ok && dest == base {
			found = append(found, n)
		}
	}
	if len(found) != 1 {
		t.Fatalf("staging names of %s in %s: %v, want one", base, dir, found)
	}
	return found[0]
}

// substitute renames a foreign file over the staging name of base in dir,
// and returns that name and the foreign file's inode.
func substitute(t *testing.T, dir, base string, foreign []byte) (name string, ino uint64) {
	t.Helper()
	name = stagingOf(t, dir, base)
	src := filepath.Join(dir, "foreign-src")
	ino = plant(t, src, foreign)
	must(t, os.Rename(src, filepath.Join(dir, name)))
	return name, ino
}

type substOp struct {
	existing bool // the destination exists before the call (a replace)
	run      func(t *testing.T, p string, data []byte) (Identity, error)
	// before is the hook that fires before the last check of the staging
	// name, or "" when the test substitutes from inside the call (fill).
	before string
	// after is the code when the substitution comes after the last check.
	after Code
}

func substOps() map[string]substOp {
	return map[string]substOp{
		"WriteFile": {existing: true, before: hook.Staged, after: CodeOutcomeUnknown,
			run: func(t *testing.T, p string, data []byte) (Identity, error) { return WriteFile(p, data, 0o600) }},
		"ReplaceExpected": {existing: true, before: hook.Staged, after: CodeOutcomeUnknown,
			run: func(t *testing.T, p string, data []byte) (Identity, error) {
				_, id := mustCapture(t, p)
				return ReplaceExpected(p, data, id)
			}},
		"Publish": {before: hook.Staged, after: CodeOutcomeUnknown,
			run: func(t *testing.T, p string, data []byte) (Identity, error) { return Publish(p, data, 0o600) }},
		"Publish link fallback": {before: hook.Staged, after: CodeOutcomeUnknown,
			run: func(t *testing.T, p string, data []byte) (Identity, error) {
				defer setHook(hook.ForceLinkFallback, func(string) {})()
				return Publish(p, data, 0o600)
			}},
		// CreateWith keeps identity_mismatch for both windows: statelock
		// reads it as "not the record we published".
		"CreateWith": {after: CodeIdentityMismatch,
			run: func(t *testing.T, p string, data []byte) (Identity, error) {
				d, err := OpenDir(filepath.Dir(p))
				if err != nil {
					return Identity{}, err
				}
				defer d.Close()
				f, id, err := d.CreateWith(filepath.Base(p), func(f *os.File) (Identity, error) {
					if _, err := f.Write(data); err != nil {
						return Identity{}, err
					}
					hook.Fire("test.fill", p)
					_, id, err := CaptureFile(f)
					return id, err
				})
				if f != nil {
					f.Close()
				}
				return id, err
			}},
	}
}

// Substituted before the last check: nothing is committed
// (identity_mismatch), the destination keeps its predecessor (or stays
// absent), and the foreign file stays at the staging name, byte- and
// inode-identical. Fails on the old code: each call returned nil and the
// destination held the foreign bytes.
func TestSubstitutedStagingNotCommitted(t *testing.T) {
	for name, op := range substOps() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			var oldIno uint64
			if op.existing {
				oldIno = plant(t, p, []byte("predecessor"))
			}
			foreign := []byte("FOREIGN BYTES")
			var sname string
			var fino uint64
			point := op.before
			if point == "" {
				point = "test.fill"
			}
			defer setHook(point, hook.Once(func(string) { sname, fino = substitute(t, dir, "f", foreign) }))()
			id, err := op.run(t, p, randBytes(100))
			if err == nil {
				t.Fatalf("a substituted staging file was committed as success: %+v", id)
			}
			wantCode(t, err, CodeIdentityMismatch)
			if id != (Identity{}) {
				t.Errorf("an identity came back with the error: %+v", id)
			}
			if op.existing {
				wantFile(t, p, []byte("predecessor"), oldIno)
				wantListing(t, dir, "f", sname)
			} else {
				wantAbsent(t, p)
				wantListing(t, dir, sname)
			}
			wantFile(t, filepath.Join(dir, sname), foreign, fino)
		})
	}
}

// Substituted after the last check, in the window a rename by name leaves
// (hook Committing): the foreign file is committed by the rename, and the
// call reports outcome_unknown (CreateWith: identity_mismatch), never
// success and never an identity; the foreign file is at the name, byte-
// and inode-identical; ReplaceExpected keeps the predecessor at the
// private name it names as residue. Fails on the old code: each call
// returned nil (the hook point is new; the window was there).
func TestSubstitutedStagingAfterCheckIsNotSuccess(t *testing.T) {
	for name, op := range substOps() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			var oldIno uint64
			if op.existing {
				oldIno = plant(t, p, []byte("predecessor"))
			}
			foreign := []byte("FOREIGN BYTES")
			var sname string
			var fino uint64
			defer setHook(hook.Committing, hook.Once(func(string) { sname, fino = substitute(t, dir, "f", foreign) }))()
			id, err := op.run(t, p, randBytes(100))
			if err == nil {
				t.Fatalf("a substituted staging file was committed as success: %+v", id)
			}
			wantCode(t, err, op.after)
			if id != (Identity{}) {
				t.Errorf("an identity came back with the error: %+v", id)
			}
			wantFile(t, p, foreign, fino)
			var e *Error
			errors.As(err, &e)
			switch name {
			case "ReplaceExpected":
				wantFile(t, filepath.Join(dir, sname), []byte("predecessor"), oldIno)
				if len(e.Residue) != 1 || filepath.Base(e.Residue[0]) != sname {
					t.Errorf("residue %v, want the predecessor at %s", e.Residue, sname)
				}
				wantListing(t, dir, "f", sname)
			case "Publish link fallback":
				// link(2) gave the name a second link to the foreign file,
				// which is not ours to remove.
				wantFile(t, filepath.Join(dir, sname), foreign, fino)
				wantListing(t, dir, "f", sname)
			default:
				wantListing(t, dir, "f")
			}
		})
	}
}

// PublishStaged: a file renamed over the caller's staged name after the
// call checked it is not published (identity_mismatch, NotCommitted, the
// file left at the staged name); one renamed there in the last window is
// published by the rename and reported Unknown with outcome_unknown.
// Fails on the old code: both were Committed with no error.
func TestPublishStagedSubstituted(t *testing.T) {
	for _, c := range []struct {
		point  string
		code   Code
		commit Commit
	}{{hook.Staged, CodeIdentityMismatch, NotCommitted}, {hook.Committing, CodeOutcomeUnknown, Unknown}} {
		t.Run(c.point, func(t *testing.T) {
			dir := t.TempDir()
			staged, p := filepath.Join(dir, ".mine"), filepath.Join(dir, "f")
			plant(t, staged, []byte("ours"))
			foreign := []byte("FOREIGN")
			var fino uint64
			defer setHook(c.point, hook.Once(func(string) {
				fino = plant(t, filepath.Join(dir, "foreign-src"), foreign)
				must(t, os.Rename(filepath.Join(dir, "foreign-src"), staged))
			}))()
			got, err := PublishStaged(staged, p)
			wantCode(t, err, c.code)
			if got != c.commit {
				t.Errorf("commit %v, want %v", got, c.commit)
			}
			if c.commit == NotCommitted {
				wantAbsent(t, p)
				wantFile(t, staged, foreign, fino)
				wantListing(t, dir, ".mine")
			} else {
				wantFile(t, p, foreign, fino)
				wantListing(t, dir, "f")
			}
		})
	}
}
