package exactfs

import (
	"fmt"

	"github.com/exactfs/exactfs/internal/sys"
)

// TreeLimits bound the tree CaptureTreeWithin agrees to read.
type TreeLimits struct {
	Entries  int   // at most this many entries, the root included, counted as they are looked at
	Depth    int   // directories deeper than this are not looked into (the capture still proves them)
	FileSize int64 // no file larger than this
}

// CaptureTreeWithin is CaptureTree of a tree within lim, for a caller
// that must not hash whatever someone planted: it first looks at the tree
// without reading a byte of any file (names and lstat sizes, at most
// lim.Entries entries and lim.Depth levels) and refuses a tree holding a
// file larger than lim.FileSize, or more entries than lim.Entries, with
// record_too_large, having read nothing of it. The capture remains the
// proof; the look only refuses early (a tree that grows between the look
// and the capture is captured as it is then).
func (d *Dir) CaptureTreeWithin(name string, lim TreeLimits) (*Tree, error) {
	const op = "capture tree"
	p, base, err := resolve(op, d, name)
	if err != nil {
		return nil, err
	}
	defer p.close()
	if what := lookTree(p.fd, base, 0, new(int), lim); what != "" {
		return nil, &Error{Op: op, Path: d.join(name), Code: CodeRecordTooLarge,
			Detail: what + "; nothing of it was read: check it and remove it by hand"}
	}
	return captureTreeAt(op, d.join(name), p.fd, base)
}

// lookTree describes the first thing under name (beneath dirfd) that
// breaks lim, or "" (also when the look itself fails: the capture then
// says why).
func lookTree(dirfd int, name string, depth int, seen *int, lim TreeLimits) string {
	st, err := sys.Lstat(dirfd, name)
	if err != nil {
		return ""
	}
	if *seen++; *seen > lim.Entries {
		return fmt.Sprintf("it holds more than %d entries", lim.Entries)
	}
	if st.Mode.IsRegular() && st.Size > lim.FileSize {
		return fmt.Sprintf("it holds %s, a file of %d bytes", name, st.Size)
	}
	if !st.Mode.IsDir() || depth >= lim.Depth {
		return ""
	}
	fd, err := sys.OpenDir(dirfd, name)
	if err != nil {
		return ""
	}
	defer sys.Close(fd)
	names, err := sys.ReadDirNames(fd)
	if err != nil {
		return ""
	}
	for _, n := range names {
		if what := lookTree(fd, n, depth+1, seen, lim); what != "" {
			return what
		}
	}
	return ""
}
