//go:build linux

package exactfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// openDirT opens path as a Dir closed at the test's end.
func openDirT(t *testing.T, path string) *Dir {
	t.Helper()
	d, err := OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// TestRawFileCalls: StatFileRaw is the fstat of the open file (not of what
// its name names later), PreadFile reads once and reports the end of the
// file as a short read without an error, BirthTime answers through the
// descriptor, and Dir.Chown changes the directory it is open on.
func TestRawFileCalls(t *testing.T) {
	base := t.TempDir()
	path := filepath.Join(base, "rec")
	putFile(t, path, []byte("0123456789"))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	plant(t, path, []byte("another"))

	st, err := StatFileRaw(f)
	if err != nil || st.Size != 10 || !st.Mode.IsRegular() || st.PermBits() != 0o600 {
		t.Fatalf("StatFileRaw = %+v, %v", st, err)
	}
	buf := make([]byte, 11)
	if n, err := PreadFile(f, buf, 0); n != 10 || err != nil || string(buf[:n]) != "0123456789" {
		t.Fatalf("PreadFile = %d, %v, %q", n, err, buf[:n])
	}
	if n, err := PreadFile(f, buf, 4); n != 6 || err != nil {
		t.Fatalf("PreadFile at 4 = %d, %v", n, err)
	}
	if _, _, err := BirthTime(f); err != nil {
		t.Fatalf("BirthTime: %v", err)
	}

	if os.Geteuid() != 0 {
		t.Skip("Dir.Chown to another uid needs root")
	}
	os.Mkdir(filepath.Join(base, "sub"), 0o700)
	d := openDirT(t, filepath.Join(base, "sub"))
	os.Rename(filepath.Join(base, "sub"), filepath.Join(base, "moved"))
	if err := d.Chown(54321, 54322); err != nil {
		t.Fatal(err)
	}
	var sst syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(base, "moved"), &sst); err != nil || sst.Uid != 54321 || sst.Gid != 54322 {
		t.Fatalf("owner %d:%d, %v; want 54321:54322 on the directory Dir is open on", sst.Uid, sst.Gid, err)
	}
}
