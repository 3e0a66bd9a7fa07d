//go:build !exactfs_portable

package exactfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

func acceptAll(RawStat) bool { return true }

// TestMoveEmptyDir: an empty directory that the caller's rule accepts
// moves to a free name, comes back open on the same inode, and looks new
// (its mtime is the move's); anything else moves nothing: a taken
// destination (fs.ErrExist), a directory with an entry, one the rule
// refuses, a symlink to an empty directory, a file, a missing name.
func TestMoveEmptyDir(t *testing.T) {
	base := t.TempDir()
	d := openDirT(t, base)
	mk := func(name string) uint64 {
		t.Helper()
		if err := os.Mkdir(filepath.Join(base, name), 0o700); err != nil {
			t.Fatal(err)
		}
		return inode(t, filepath.Join(base, name))
	}

	ino := mk("spare")
	old := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(base, "spare"), old, old)
	moved, err := d.MoveEmptyDir("spare", "claim", acceptAll)
	if err != nil {
		t.Fatal(err)
	}
	defer moved.Close()
	if _, mino := moved.Inode(); mino != ino || inode(t, filepath.Join(base, "claim")) != ino {
		t.Fatalf("moved inode %d, claim %d, want %d", mino, inode(t, filepath.Join(base, "claim")), ino)
	}
	if fi, _ := os.Lstat(filepath.Join(base, "claim")); time.Since(fi.ModTime()) > time.Minute {
		t.Fatalf("the moved directory's mtime is %v: not renewed", fi.ModTime())
	}
	if _, err := os.Lstat(filepath.Join(base, "spare")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("spare still there: %v", err)
	}

	// A taken destination: nothing moves.
	ino = mk("spare")
	if _, err := d.MoveEmptyDir("spare", "claim", acceptAll); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("onto a taken name: %v, want fs.ErrExist", err)
	}
	if inode(t, filepath.Join(base, "spare")) != ino {
		t.Fatal("the spare moved")
	}

	os.WriteFile(filepath.Join(base, "spare", "x"), nil, 0o600)
	os.Mkdir(filepath.Join(base, "empty"), 0o700)
	os.Symlink("empty", filepath.Join(base, "link"))
	os.WriteFile(filepath.Join(base, "file"), nil, 0o600)
	for _, c := range []struct {
		src    string
		accept func(RawStat) bool
	}{
		{"spare", acceptAll}, // not empty
		{"empty", func(RawStat) bool { return false }},
		{"link", acceptAll},
		{"file", acceptAll},
		{"missing", acceptAll},
	} {
		if m, err := d.MoveEmptyDir(c.src, "dst", c.accept); err == nil {
			m.Close()
			t.Errorf("MoveEmptyDir(%s) moved it", c.src)
		}
		if _, err := os.Lstat(filepath.Join(base, "dst")); err == nil {
			t.Fatalf("MoveEmptyDir(%s) made dst", c.src)
		}
	}
	if fi, err := os.Lstat(filepath.Join(base, "link")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("the symlink was touched")
	}
}

// TestMoveEmptyDirSwapped: a directory swapped in at the source between
// the proof and the rename (hook MoveDirChecked) is what the rename moves;
// the move sees it at the destination, puts it back at the source, and
// fails with ErrIdentityMismatch. Afterwards the swapped-in directory is
// at the source, byte- and inode-identical, the destination is free, and
// the proved directory is where the swapper left it. Without the look
// after the rename, the move reports success with the stranger's
// directory at dst (this test fails).
func TestMoveEmptyDirSwapped(t *testing.T) {
	base := t.TempDir()
	d := openDirT(t, base)
	spare := filepath.Join(base, "spare")
	os.Mkdir(spare, 0o700)
	proved := inode(t, spare)
	var stranger uint64
	withHook(t, hook.MoveDirChecked, hook.Once(func(string) {
		if err := os.Rename(spare, filepath.Join(base, "aside")); err != nil {
			t.Error(err)
		}
		os.Mkdir(spare, 0o700)
		os.WriteFile(filepath.Join(spare, "theirs"), []byte("keep"), 0o600)
		stranger = inode(t, spare)
	}))
	m, err := d.MoveEmptyDir("spare", "claim", acceptAll)
	if !errors.Is(err, ErrIdentityMismatch) {
		if m != nil {
			m.Close()
		}
		t.Fatalf("MoveEmptyDir = %v, want ErrIdentityMismatch", err)
	}
	if got := inode(t, spare); got != stranger {
		t.Fatalf("spare is inode %d, want the stranger's %d put back", got, stranger)
	}
	if b, err := os.ReadFile(filepath.Join(spare, "theirs")); err != nil || string(b) != "keep" {
		t.Fatalf("the stranger's entry: %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(base, "claim")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("claim: %v, want nothing there", err)
	}
	if inode(t, filepath.Join(base, "aside")) != proved {
		t.Fatal("the proved directory moved")
	}
}

// TestMoveEmptyDirSwappedNoPutBack: when the swapped object cannot be put
// back (a name was planted at the source after the rename, hook
// MoveDirMoved), the move fails with ErrRestoreFailed naming, in Residue,
// the private name the stranger's directory now is at; the planted name
// is untouched and nothing is at the destination.
func TestMoveEmptyDirSwappedNoPutBack(t *testing.T) {
	base := t.TempDir()
	d := openDirT(t, base)
	spare := filepath.Join(base, "spare")
	os.Mkdir(spare, 0o700)
	var stranger uint64
	withHook(t, hook.MoveDirChecked, hook.Once(func(string) {
		os.Rename(spare, filepath.Join(base, "aside"))
		os.Mkdir(spare, 0o700)
		stranger = inode(t, spare)
	}))
	withHook(t, hook.MoveDirMoved, hook.Once(func(string) { putFile(t, spare, []byte("planted")) }))
	m, err := d.MoveEmptyDir("spare", "claim", acceptAll)
	var e *Error
	if !errors.Is(err, ErrRestoreFailed) || !errors.As(err, &e) || len(e.Residue) != 1 ||
		!strings.HasPrefix(filepath.Base(e.Residue[0]), QuarantinePrefix+"movedir-") || filepath.Dir(e.Residue[0]) != base {
		if m != nil {
			m.Close()
		}
		t.Fatalf("MoveEmptyDir = %v, want ErrRestoreFailed with a private name as residue", err)
	}
	if inode(t, e.Residue[0]) != stranger {
		t.Fatal("the residue is not the stranger's directory")
	}
	if _, err := os.Lstat(filepath.Join(base, "claim")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("claim: %v, want nothing there", err)
	}
	if b, err := os.ReadFile(spare); err != nil || string(b) != "planted" {
		t.Fatalf("the planted name: %q, %v", b, err)
	}
}

// TestMoveEmptyDirSwappedNeverMovesSuccessor: the spare is swapped for a
// stranger's directory after its proof (hook MoveDirChecked), and by the
// time the mover looks at what moved, a successor has made the
// destination its own (hook MoveDirMoved: the moved object judged and
// removed, the claim made anew by another taker). The move fails, the
// stranger goes back, and the successor's directory stays where it is: a
// move that looked at the destination for what moved would have taken the
// successor's live claim away (the review of the root move showed it).
func TestMoveEmptyDirSwappedNeverMovesSuccessor(t *testing.T) {
	base := t.TempDir()
	d := openDirT(t, base)
	spare := filepath.Join(base, "spare")
	claim := filepath.Join(base, "claim")
	os.Mkdir(spare, 0o700)
	var stranger, successor uint64
	withHook(t, hook.MoveDirChecked, hook.Once(func(string) {
		os.Rename(spare, filepath.Join(base, "aside"))
		os.Mkdir(spare, 0o700)
		stranger = inode(t, spare)
	}))
	withHook(t, hook.MoveDirMoved, hook.Once(func(string) {
		// Whatever the mover's rename did, a successor now holds claim.
		os.Remove(claim)
		if err := os.Mkdir(claim, 0o700); err != nil {
			t.Error(err)
		}
		successor = inode(t, claim)
	}))
	m, err := d.MoveEmptyDir("spare", "claim", acceptAll)
	if !errors.Is(err, ErrIdentityMismatch) {
		if m != nil {
			m.Close()
		}
		t.Fatalf("MoveEmptyDir = %v, want ErrIdentityMismatch", err)
	}
	if got := inode(t, claim); got != successor {
		t.Fatalf("claim is inode %d, want the successor's %d left in place", got, successor)
	}
	if got := inode(t, spare); got != stranger {
		t.Fatalf("spare is inode %d, want the stranger's %d put back", got, stranger)
	}
}

// TestMoveHeldDir: a held directory goes from its name to another when the
// name still names it and it is empty; not when it holds an entry or the
// destination is taken (moved false, for the caller to remove it
// otherwise); and never when the name names another directory
// (ErrIdentityMismatch, nothing moved). dst "" only proves.
func TestMoveHeldDir(t *testing.T) {
	base := t.TempDir()
	d := openDirT(t, base)
	held, err := d.CreateDir("claim", 0o700)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, ino := held.Inode()

	if moved, err := d.MoveHeldDir(held, "claim", ""); moved || err != nil {
		t.Fatalf("prove only: %v, %v", moved, err)
	}
	os.WriteFile(filepath.Join(base, "claim", "x"), nil, 0o600)
	if moved, err := d.MoveHeldDir(held, "claim", "spare"); moved || err != nil {
		t.Fatalf("not empty: %v, %v; want false, nil", moved, err)
	}
	os.Remove(filepath.Join(base, "claim", "x"))
	os.Mkdir(filepath.Join(base, "spare"), 0o700)
	if moved, err := d.MoveHeldDir(held, "claim", "spare"); moved || err != nil {
		t.Fatalf("onto a taken name: %v, %v; want false, nil", moved, err)
	}
	os.Remove(filepath.Join(base, "spare"))
	if moved, err := d.MoveHeldDir(held, "claim", "spare"); !moved || err != nil {
		t.Fatalf("MoveHeldDir = %v, %v; want moved", moved, err)
	}
	if inode(t, filepath.Join(base, "spare")) != ino {
		t.Fatal("spare is not the held directory")
	}

	// The name now names another directory: nothing moves.
	os.Mkdir(filepath.Join(base, "claim"), 0o700)
	other := inode(t, filepath.Join(base, "claim"))
	os.Remove(filepath.Join(base, "spare"))
	if moved, err := d.MoveHeldDir(held, "claim", "spare"); moved || !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("another directory at the name: %v, %v; want ErrIdentityMismatch", moved, err)
	}
	if inode(t, filepath.Join(base, "claim")) != other {
		t.Fatal("the other directory moved")
	}
	if _, err := d.MoveHeldDir(held, "missing", "spare"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing name: %v", err)
	}
}

// TestCreateDir: the directory is made with exactly the mode asked for
// whatever the umask took away, returned open on the inode it made, and a
// name that exists is refused with fs.ErrExist without being touched.
func TestCreateDir(t *testing.T) {
	base := t.TempDir()
	d := openDirT(t, base)
	c, err := d.CreateDir("c", 0o777)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fi, err := os.Lstat(filepath.Join(base, "c"))
	if err != nil || fi.Mode().Perm() != 0o777 || !fi.IsDir() {
		t.Fatalf("made %v, %v; want a 0777 directory", fi.Mode(), err)
	}
	if _, ino := c.Inode(); ino != inode(t, filepath.Join(base, "c")) {
		t.Fatal("the Dir is not open on the directory made")
	}
	os.Chmod(filepath.Join(base, "c"), 0o700)
	if _, err := d.CreateDir("c", 0o777); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CreateDir of an existing name: %v, want fs.ErrExist", err)
	}
	if fi, _ := os.Lstat(filepath.Join(base, "c")); fi.Mode().Perm() != 0o700 {
		t.Fatal("the existing directory was touched")
	}
}
