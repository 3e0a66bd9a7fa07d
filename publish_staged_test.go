//go:build unix

package exactfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/exactfs/exactfs/internal/hook"
)

func testPublishStaged(t *testing.T, dir string) {
	for _, mode := range []string{"rename", "link"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "link" {
				withHook(t, hook.ForceLinkFallback, func(string) {})
			}
			sub := filepath.Join(dir, mode)
			must(t, os.Mkdir(sub, 0o700))
			staged, name := filepath.Join(sub, ".rec.tmp"), filepath.Join(sub, "rec")
			data := randBytes(300)
			putFile(t, staged, data)
			// The caller holds the staged file open (and locked) throughout.
			f, err := os.Open(staged)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			ino := inode(t, staged)
			c, err := PublishStaged(staged, name)
			if err != nil || c != Committed {
				t.Fatalf("PublishStaged: %v, %v", c, err)
			}
			wantFile(t, name, data, ino)
			var st syscall.Stat_t
			must(t, syscall.Fstat(int(f.Fd()), &st))
			if st.Ino != ino {
				t.Fatal("the held descriptor is not the published file")
			}
			// Through FUSE (and NFS) the removal of a staged name that is
			// still open is a rename to a hidden name until the close; the
			// doc comment says so. It must be gone once the file is closed.
			f.Close()
			for deadline := time.Now().Add(2 * time.Second); len(listing(t, sub)) > 1 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			wantListing(t, sub, "rec")
			if n := lstatT(t, name).Nlink; n != 1 {
				t.Fatalf("published with %d links", n)
			}

			// An existing name, before or during: nothing changes.
			for _, late := range []bool{false, true} {
				putFile(t, staged, []byte("second"))
				sino := inode(t, staged)
				var c Commit
				var err error
				if late {
					must(t, os.Rename(name, name+".aside"))
					withHookUntil(t, hook.Staged, func(string) { must(t, os.Rename(name+".aside", name)) }, func() {
						c, err = PublishStaged(staged, name)
					})
				} else {
					c, err = PublishStaged(staged, name)
				}
				wantCode(t, err, CodeDestinationExists)
				if c != NotCommitted {
					t.Fatalf("late=%v: %v", late, c)
				}
				wantFile(t, name, data, ino)
				wantFile(t, staged, []byte("second"), sino)
				wantListing(t, sub, ".rec.tmp", "rec")
			}

			// A staged name that is not a single-link regular file is refused.
			must(t, os.Link(staged, staged+"2"))
			_, err = PublishStaged(staged, filepath.Join(sub, "other"))
			wantCode(t, err, CodeHardLinkUnsupported)
			must(t, os.Remove(staged+"2"))
			must(t, os.Remove(staged))
			must(t, os.Symlink("rec", staged))
			_, err = PublishStaged(staged, filepath.Join(sub, "other"))
			wantCode(t, err, CodeReparsePoint)
			wantListing(t, sub, ".rec.tmp", "rec")
		})
	}
}
