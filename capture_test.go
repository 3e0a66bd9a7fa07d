//go:build unix

package exactfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
	"github.com/exactfs/exactfs/internal/testfs"
	"golang.org/x/sys/unix"
)

func TestCaptureReadsBytesAndIdentity(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	for _, data := range [][]byte{{}, []byte("x"), randBytes(100), randBytes(64<<10 - 512), randBytes(64<<10 - 511), randBytes(65100), randBytes(64<<10 - 1),
		randBytes(64 << 10), randBytes(64<<10 + 1), randBytes(1<<20 + 7)} {
		putFile(t, p, data)
		got, id, err := Capture(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) || got == nil {
			t.Fatalf("captured %d bytes, want %d", len(got), len(data))
		}
		st := unixLstatT(t, p)
		if id.Ino != st.Ino || id.Dev != uint64(st.Dev) || id.Size != int64(len(data)) || id.Nlink != 1 ||
			id.MtimeNs != st.Mtim.Nano() || id.CtimeNs != st.Ctim.Nano() || id.SHA256 != sum256(data) || !id.Mode.IsRegular() {
			t.Fatalf("identity %+v does not describe the file %+v", id, st)
		}
		id2, err := IdentityOf(p)
		if err != nil || id2 != id {
			t.Fatalf("IdentityOf = %v, %v; Capture said %v", id2, err, id)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Seek(3, 0)
		got, id3, err := CaptureFile(f)
		if err != nil || id3 != id || !bytes.Equal(got, data) {
			t.Fatalf("CaptureFile = %v, %v", id3, err)
		}
		if off, _ := f.Seek(0, 1); off != 3 {
			t.Fatalf("CaptureFile moved the offset to %d", off)
		}
		f.Close()
	}
}

// A file that changes between the two fstats of a capture yields no bytes
// and ErrChangedDuringRead, whatever the change.
func TestCaptureChangedDuringRead(t *testing.T) {
	old := bytes.Repeat([]byte("o"), 100<<10)
	for _, tc := range []struct {
		name   string
		mutate func(t *testing.T, p string)
	}{
		{"append", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("more"))
			f.Close()
		}},
		{"truncate", func(t *testing.T, p string) {
			if err := os.Truncate(p, 10); err != nil {
				t.Fatal(err)
			}
		}},
		{"same size, other bytes", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteAt(bytes.Repeat([]byte("n"), len(old)), 0)
			f.Close()
		}},
		{"a second link", func(t *testing.T, p string) { must(t, os.Link(p, p+".2")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			putFile(t, p, old)
			fired := 0
			restore := setHook(hook.CaptureRead, func(string) { fired++; tc.mutate(t, p) })
			data, id, err := Capture(p)
			restore()
			if fired != 1 {
				t.Fatalf("hook fired %d times", fired)
			}
			wantCode(t, err, CodeChangedDuringRead)
			if data != nil || id != (Identity{}) {
				t.Fatalf("a failed capture returned data (%d bytes) or an identity %v", len(data), id)
			}
			// Once the file holds still, it is captured.
			want, _ := os.ReadFile(p)
			if got, _, err := Capture(p); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("capture after the change: %v", err)
			}
		})
	}
}

// A change of status alone (rename, chmod: the ctime moves, not a byte)
// during the read is not a change of the file: the capture succeeds and
// reports the ctime as it is after the read.
func TestCaptureIgnoresStatusChanges(t *testing.T) {
	for name, mutate := range map[string]func(t *testing.T, p string){
		"renamed away and back": func(t *testing.T, p string) {
			must(t, os.Rename(p, p+".away"))
			must(t, os.Rename(p+".away", p))
		},
		"chmod": func(t *testing.T, p string) { must(t, os.Chmod(p, 0o640)) },
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			data := randBytes(1000)
			putFile(t, p, data)
			before := unixLstatT(t, p).Ctim.Nano()
			time.Sleep(2 * time.Millisecond)
			restore := setHook(hook.CaptureRead, func(string) { mutate(t, p) })
			got, id, err := Capture(p)
			restore()
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("capture: %v", err)
			}
			if now := unixLstatT(t, p).Ctim.Nano(); id.CtimeNs != now || now == before {
				t.Fatalf("ctime %d in the identity, %d before, %d now", id.CtimeNs, before, now)
			}
		})
	}
}

// adversary is an object planted where a regular file is expected.
type adversary struct {
	name string
	make func(t *testing.T, p string)
	code Code // what a read or a replace of it must return
}

var adversaries = []adversary{
	{"symlink to a file", func(t *testing.T, p string) {
		victim := filepath.Join(filepath.Dir(p), "victim")
		putFile(t, victim, []byte("do not touch"))
		must(t, os.Symlink("victim", p))
	}, CodeReparsePoint},
	{"symlink to a directory", func(t *testing.T, p string) {
		victim := filepath.Join(filepath.Dir(p), "victim-dir")
		must(t, os.Mkdir(victim, 0o700))
		putFile(t, filepath.Join(victim, "keep"), []byte("do not touch"))
		must(t, os.Symlink("victim-dir", p))
	}, CodeReparsePoint},
	{"dangling symlink", func(t *testing.T, p string) { must(t, os.Symlink("nowhere", p)) }, CodeReparsePoint},
	{"FIFO with no writer", func(t *testing.T, p string) { must(t, syscall.Mkfifo(p, 0o600)) }, CodeNotRegularFile},
	{"unix socket", func(t *testing.T, p string) {
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		t.Cleanup(func() { l.Close() })
	}, CodeNotRegularFile},
	{"directory", func(t *testing.T, p string) {
		must(t, os.Mkdir(p, 0o700))
		putFile(t, filepath.Join(p, "inside"), []byte("keep"))
	}, CodeNotRegularFile},
	{"character device", func(t *testing.T, p string) {
		err := syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3) // /dev/null: 1,3
		testfs.Require(t, "mknod of a character device (root)", err == nil, fmt.Sprint(err))
	}, CodeNotRegularFile},
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Every operation that reads, replaces or removes a file refuses an
// adversarial object at the path promptly, with the right code, and leaves
// it (and whatever it points to) exactly as it was.
func TestAdversarialPaths(t *testing.T) { walkModes(t, testAdversarialPaths) }

func testAdversarialPaths(t *testing.T) {
	some := Identity{Dev: 1, Ino: 2, Nlink: 1, Mode: 0o600}
	ops := []struct {
		name string
		do   func(p string) error
		code func(a adversary) Code
	}{
		{"Capture", func(p string) error { _, _, err := Capture(p); return err }, nil},
		{"IdentityOf", func(p string) error { _, err := IdentityOf(p); return err }, nil},
		{"OpenFile", func(p string) error {
			f, err := OpenFile(p, os.O_RDONLY, 0)
			if err == nil {
				f.Close()
			}
			return err
		}, nil},
		{"OpenFile O_RDWR|O_CREATE", func(p string) error {
			f, err := OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		}, nil},
		// An exclusive create is opened without O_NONBLOCK (it never opens
		// an existing object, so nothing planted can block it): it must
		// answer promptly that the name is taken, whatever is there.
		{"OpenFile O_WRONLY|O_CREATE|O_EXCL", func(p string) error {
			f, err := OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err == nil {
				f.Close()
			}
			return err
		}, func(adversary) Code { return CodeDestinationExists }},
		{"UnlinkExact", func(p string) error { return UnlinkExact(p, some, "q") }, nil},
		{"ReplaceExpected", func(p string) error { _, err := ReplaceExpected(p, []byte("new"), some); return err }, nil},
		{"WriteFile", func(p string) error { _, err := WriteFile(p, []byte("new"), 0o600); return err }, nil},
		{"Publish", func(p string) error { _, err := Publish(p, []byte("new"), 0o600); return err },
			func(adversary) Code { return CodeDestinationExists }},
		{"CaptureTree", func(p string) error { _, err := CaptureTree(p); return err }, treeCode},
		{"RemoveTreeExact", func(p string) error {
			return RemoveTreeExact(p, &Tree{Entries: []TreeEntry{{Identity: Identity{Mode: fs.ModeDir | 0o700}}}})
		}, treeCode},
	}
	for _, a := range adversaries {
		for _, op := range ops {
			if a.name == "directory" && op.code != nil && op.code(a) == "" {
				continue // a directory is what the tree operations expect
			}
			t.Run(a.name+"/"+op.name, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, "target")
				a.make(t, p)
				before := snapshotDir(t, dir)
				want := a.code
				if op.code != nil {
					want = op.code(a)
				}
				err := within(t, time.Second, func() error { return op.do(p) })
				wantCode(t, err, want)
				wantUnchanged(t, dir, before)
			})
		}
	}
}

// treeCode is what a tree operation says about an adversary where it
// expects a directory ("" for the directory itself).
func treeCode(a adversary) Code {
	switch {
	case a.code == CodeReparsePoint:
		return CodeReparsePoint
	case a.name == "directory":
		return ""
	}
	return CodeNotDirectory
}

// within runs f in a goroutine and fails the test if it takes longer than
// limit: an open that blocks on a FIFO would hang forever.
func within(t *testing.T, limit time.Duration, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f() }()
	select {
	case err := <-done:
		if d := time.Since(start); d > limit {
			t.Fatalf("took %v, want under %v", d, limit)
		}
		return err
	case <-time.After(limit + 5*time.Second):
		t.Fatalf("still blocked after %v", limit+5*time.Second)
		return nil
	}
}

// A symlink in any directory component is refused, even when it points to
// the right place; so is "..", and a non-directory in a directory position.
func TestWalkRefusesSymlinkedAncestor(t *testing.T) {
	walkModes(t, testWalkRefusesSymlinkedAncestor)
}

// walkModes runs f with the one-call openat2 walk and with the component
// walk that macOS and kernels before 5.6 use.
func walkModes(t *testing.T, f func(t *testing.T)) {
	t.Run("openat2", f)
	t.Run("components", func(t *testing.T) {
		withHook(t, hook.ForceWalk, func(string) {})
		f(t)
	})
}

func testWalkRefusesSymlinkedAncestor(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	must(t, os.MkdirAll(filepath.Join(real, "sub"), 0o700))
	data := []byte("bytes")
	putFile(t, filepath.Join(real, "sub", "f"), data)
	_, id := mustCapture(t, filepath.Join(real, "sub", "f"))
	must(t, os.Symlink("real", filepath.Join(dir, "link")))
	must(t, os.Symlink("sub", filepath.Join(real, "sublink")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600))
	before := snapshotDir(t, dir)

	paths := []struct {
		path string
		code Code
	}{
		{filepath.Join(dir, "link", "sub", "f"), CodeReparsePoint},
		{filepath.Join(real, "sublink", "f"), CodeReparsePoint},
		{filepath.Join(dir, "fifo", "f"), CodeNotDirectory},
		{filepath.Join(real, "sub", "f", "x"), CodeNotDirectory},
		{real + "/sub/../sub/f", CodeInvalidRequest},
		{"../" + filepath.Base(dir) + "/real/sub/f", CodeInvalidRequest},
		{"", CodeInvalidRequest},
		{real + "/sub/f\x00", CodeInvalidRequest},
		{filepath.Join(real, "missing", "f"), CodeNotFound},
	}
	for _, tc := range paths {
		for name, op := range map[string]func(p string) error{
			"Capture":         func(p string) error { _, _, err := Capture(p); return err },
			"UnlinkExact":     func(p string) error { return UnlinkExact(p, id, "q") },
			"ReplaceExpected": func(p string) error { _, err := ReplaceExpected(p, []byte("x"), id); return err },
			"WriteFile":       func(p string) error { _, err := WriteFile(p, []byte("x"), 0o600); return err },
			"Publish":         func(p string) error { _, err := Publish(p, []byte("x"), 0o600); return err },
			"CaptureTree":     func(p string) error { _, err := CaptureTree(p); return err },
			"OpenDir": func(p string) error {
				d, err := OpenDir(p)
				if err == nil {
					d.Close()
				}
				return err
			},
		} {
			err := within(t, time.Second, func() error { return op(tc.path) })
			want := tc.code
			if CodeOf(err) != want {
				t.Errorf("%s(%q) = %v, want %s", name, tc.path, err, want)
			}
		}
	}
	wantUnchanged(t, dir, before)
	wantFile(t, filepath.Join(real, "sub", "f"), data, id.Ino)
}

// TestCaptureRecordCap: a file larger than RecordCap is record_too_large
// for CaptureRecord and CaptureRecordFile after one fstat, with no read
// (the capture's read hook never fires for it); one at the cap is read.
func TestCaptureRecordCap(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	reads := 0
	defer hook.Set(hook.CaptureRead, func(p string) {
		if filepath.Base(p) == "big" {
			reads++
		}
	})()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.CaptureRecord("big"); CodeOf(err) != CodeRecordTooLarge || !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("CaptureRecord of 1 GiB: %v", err)
	}
	if _, _, err := CaptureRecordFile(f); CodeOf(err) != CodeRecordTooLarge {
		t.Fatalf("CaptureRecordFile of 1 GiB: %v", err)
	}
	if reads != 0 {
		t.Fatalf("the 1 GiB file was read %d times", reads)
	}
	if err := f.Truncate(RecordCap); err != nil {
		t.Fatal(err)
	}
	if data, _, err := d.CaptureRecord("big"); err != nil || len(data) != RecordCap {
		t.Fatalf("CaptureRecord at the cap: %d bytes, %v", len(data), err)
	}
}

// OpenCaptureRecord is OpenFile and CaptureRecordFile in one, with the
// fstat that proves the type serving as the capture's first: it returns
// what the two return, refuses what they refuse (an adversary at the name,
// a file over RecordCap, a change during the read, a creating flag), and
// the descriptor it returns is the inode the bytes came from. The changes
// during the read are caught because the open's fstat is the "before" that
// the fstat after the read is compared with, as in every capture.
func TestOpenCaptureRecord(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rec := []byte(`{"pid":1,"start_time":"1"}`)
	putFile(t, filepath.Join(dir, "rec"), rec)
	for _, flag := range []int{os.O_RDONLY, os.O_RDWR} {
		f, data, id, err := d.OpenCaptureRecord("rec", flag)
		if err != nil {
			t.Fatal(err)
		}
		g, err := d.OpenFile("rec", flag, 0)
		if err != nil {
			t.Fatal(err)
		}
		gdata, gid, err := CaptureRecordFile(g)
		g.Close()
		if err != nil || !bytes.Equal(data, gdata) || !id.Equal(gid) || !bytes.Equal(data, rec) {
			t.Fatalf("flag %#x: OpenCaptureRecord gave %q %v, OpenFile+CaptureRecordFile %q %v (%v)", flag, data, id, gdata, gid, err)
		}
		fdata, fid, err := CaptureRecordFile(f)
		if err != nil || !bytes.Equal(fdata, rec) || !fid.Equal(id) {
			t.Fatalf("the returned descriptor is not the captured inode: %v %v", fid, err)
		}
		f.Close()
	}
	for _, flag := range []int{os.O_RDWR | os.O_CREATE, os.O_RDWR | os.O_TRUNC, os.O_WRONLY | os.O_APPEND, os.O_RDWR | os.O_CREATE | os.O_EXCL} {
		if _, _, _, err := d.OpenCaptureRecord("rec", flag); CodeOf(err) != CodeInvalidRequest {
			t.Fatalf("flag %#x: %v, want invalid_request", flag, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "rec")); !bytes.Equal(got, rec) {
		t.Fatalf("a refused flag changed the record: %q", got)
	}

	// Over the cap: refused after the one fstat, nothing read.
	big := filepath.Join(dir, "big")
	putFile(t, big, nil)
	must(t, os.Truncate(big, 1<<30))
	reads := 0
	restore := setHook(hook.CaptureRead, func(string) { reads++ })
	_, _, _, err = d.OpenCaptureRecord("big", os.O_RDONLY)
	restore()
	if CodeOf(err) != CodeRecordTooLarge || reads != 0 {
		t.Fatalf("1 GiB record: %v after %d reads", err, reads)
	}

	// Changed during the read: grown, rewritten in place, replaced.
	for name, mutate := range map[string]func(p string){
		"grown during the read": func(p string) {
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			f.Write([]byte("   "))
			f.Close()
		},
		"same size, other bytes": func(p string) {
			time.Sleep(2 * time.Millisecond)
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			must(t, err)
			f.WriteAt(bytes.Repeat([]byte("x"), len(rec)), 0)
			f.Close()
		},
	} {
		p := filepath.Join(dir, "rec")
		putFile(t, p, rec)
		restore := setHook(hook.CaptureRead, func(string) { mutate(p) })
		f, data, _, err := d.OpenCaptureRecord("rec", os.O_RDWR)
		restore()
		if CodeOf(err) != CodeChangedDuringRead || f != nil || data != nil {
			t.Fatalf("%s: %v (file %v, %d bytes)", name, err, f != nil, len(data))
		}
	}

	// Every adversary is refused promptly, with its code, untouched.
	for _, a := range adversaries {
		t.Run(a.name, func(t *testing.T) {
			sub := t.TempDir()
			a.make(t, filepath.Join(sub, "target"))
			sd, err := OpenDir(sub)
			if err != nil {
				t.Fatal(err)
			}
			defer sd.Close()
			before := snapshotDir(t, sub)
			err = within(t, time.Second, func() error {
				f, _, _, err := sd.OpenCaptureRecord("target", os.O_RDWR)
				if err == nil {
					f.Close()
				}
				return err
			})
			wantCode(t, err, a.code)
			wantUnchanged(t, sub, before)
		})
	}
}

// unixLstatT is lstat as x/sys/unix spells it, whose Stat_t names the
// timestamps Mtim and Ctim on Linux and macOS alike (package syscall's
// darwin Stat_t calls them Mtimespec and Ctimespec).
func unixLstatT(t testing.TB, path string) *unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return &st
}
