package exactfs

import (
	"fmt"

	"github.com/exactfs/exactfs/internal/sys"
)

// TreeLimits bound the tree CaptureTreeWithin agrees to read.
type TreeLimits struct {
	Entries  int   // at most this many entries, the root included
	Depth    int   // no entry deeper than this below the root (the root's entries are at depth 1)
	FileSize int64 // no file larger than this
}

// CaptureTreeWithin is CaptureTree of a tree within lim, for a caller
// that must not hash whatever someone planted. It first looks at the tree
// without reading a byte of any file (names and lstat sizes) and refuses a
// tree that holds more than lim.Entries entries, an entry deeper than
// lim.Depth or a file larger than lim.FileSize, with record_too_large,
// having read nothing of it. The capture that follows is the proof, and
// holds to the same limits (a tree that grew since the look is refused
// then, a file that grew is not read past lim.FileSize), so no tree costs
// more than the limits whatever it does meanwhile. A directory's names are
// read whole before they are counted: the limits bound the files read, not
// the listing of one huge directory.
func (d *Dir) CaptureTreeWithin(name string, lim TreeLimits) (*Tree, error) {
	const op = "capture tree"
	p, base, err := resolve(op, d, name)
	if err != nil {
		return nil, err
	}
	defer p.close()
	path := d.join(name)
	if what := lookTree(p.fd, base, 0, new(int), &lim); what != "" {
		return nil, tooLargeTree(op, path, what)
	}
	return captureTreeAt(op, path, p.fd, base, &lim, nil)
}

// tooLargeTree is the refusal of a tree beyond its limits.
func tooLargeTree(op, path, what string) error {
	return &Error{Op: op, Path: path, Code: CodeRecordTooLarge,
		Detail: what + "; nothing of it was read beyond the limits, and no lock directory holds that: check it and remove it by hand"}
}

// breaks describes how the entry rel, the n-th of the tree (the root is
// the first), at depth with lstat st, breaks lim, or "" (always "" for a
// nil lim: no limits).
func (lim *TreeLimits) breaks(rel string, n, depth int, st sys.Stat) string {
	switch {
	case lim == nil:
		return ""
	case n > lim.Entries:
		return fmt.Sprintf("it holds more than %d entries", lim.Entries)
	case depth > lim.Depth:
		return fmt.Sprintf("it holds entries more than %d levels deep", lim.Depth)
	case st.Mode.IsRegular() && st.Size > lim.FileSize:
		return fmt.Sprintf("it holds %s, a file of %d bytes (at most %d are read)", rel, st.Size, lim.FileSize)
	}
	return ""
}

// lookTree describes the first thing under name (beneath dirfd, at depth)
// that breaks lim, or "" (also when the look itself fails: the capture then
// says why).
func lookTree(dirfd int, name string, depth int, seen *int, lim *TreeLimits) string {
	st, err := sys.Lstat(dirfd, name)
	if err != nil {
		return ""
	}
	*seen++
	if what := lim.breaks(name, *seen, depth, st); what != "" {
		return what
	}
	if !st.Mode.IsDir() {
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
