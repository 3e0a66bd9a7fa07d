package exactfs

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// The umask test's writes run in a child process of their own: the umask
// belongs to the whole process, and the other tests of this binary create
// files in parallel.
func init() {
	children["umask-writes"] = func(args []string) error {
		m, err := strconv.ParseUint(args[0], 8, 32)
		if err != nil {
			return err
		}
		syscall.Umask(int(m))
		dir := args[1]
		for _, perm := range umaskPerms {
			p := func(kind string) string { return filepath.Join(dir, fmt.Sprintf("%s-%04o", kind, perm)) }
			if err := os.WriteFile(p("os"), []byte("x"), perm); err != nil {
				return err
			}
			if _, err := WriteFile(p("writefile"), []byte("x"), perm); err != nil {
				return err
			}
			if _, err := Publish(p("publish"), []byte("x"), perm); err != nil {
				return err
			}
			// A replace: the umask applies whether or not the name exists.
			if err := os.WriteFile(p("replace"), []byte("old"), 0o600); err != nil {
				return err
			}
			if _, err := WriteFile(p("replace"), []byte("x"), perm); err != nil {
				return err
			}
			if _, err := WriteFile(p("exact"), []byte("x"), perm, ExactPerm()); err != nil {
				return err
			}
			if _, err := Publish(p("exactpub"), []byte("x"), perm, ExactPerm()); err != nil {
				return err
			}
		}
		os.Exit(0)
		return nil
	}
}

var umaskPerms = []fs.FileMode{0o666, 0o644, 0o640, 0o600, 0o755, 0o777}

// TestWriteFileAppliesUmask: in a process with umask 022, 027, 077 or 002,
// WriteFile and Publish give a new file (and a replacement) the mode
// os.WriteFile gives for the same perm, so 0o666 is never world-writable
// under 022; ExactPerm gives exactly perm. Fails on f315da3, where both
// ignored the umask (0o666 gave 0666).
func TestWriteFileAppliesUmask(t *testing.T) {
	for _, um := range []string{"022", "027", "077", "002"} {
		t.Run(um, func(t *testing.T) {
			dir := t.TempDir()
			args, _ := json.Marshal([]string{um, dir})
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"=umask-writes", childArgsEnv+"="+string(args))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			mode := func(kind string, perm fs.FileMode) fs.FileMode {
				fi, err := os.Lstat(filepath.Join(dir, fmt.Sprintf("%s-%04o", kind, perm)))
				if err != nil {
					t.Fatal(err)
				}
				return fi.Mode().Perm()
			}
			for _, perm := range umaskPerms {
				want := mode("os", perm)
				for _, kind := range []string{"writefile", "publish", "replace"} {
					if got := mode(kind, perm); got != want {
						t.Errorf("umask %s, perm %04o: %s gave %04o, os.WriteFile %04o", um, perm, kind, got, want)
					}
				}
				for _, kind := range []string{"exact", "exactpub"} {
					if got := mode(kind, perm); got != perm {
						t.Errorf("umask %s: %s with ExactPerm(%04o) gave %04o", um, kind, perm, got)
					}
				}
			}
		})
	}
}
