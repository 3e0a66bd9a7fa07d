package exactfs

import "testing"

// TestWindowsTreePathsShownWithBackslashes: the path of an entry of a tree
// named in an error (CaptureTree, RemoveTreeExact) is the tree's path and
// the entry's "/"-separated path joined with Windows's separator; the code
// that appended them with "/" showed `C:\t/a/b`.
func TestWindowsTreePathsShownWithBackslashes(t *testing.T) {
	for _, tc := range []struct{ path, rel, want string }{
		{`C:\t`, "a/b", `C:\t\a\b`},
		{`C:\t`, "a/", `C:\t\a\`},
		{`C:\t`, "", `C:\t\`},
		{`t`, "f", `t\f`},
	} {
		if got := joinShown(tc.path, tc.rel); got != tc.want {
			t.Errorf("joinShown(%q, %q) = %q, want %q", tc.path, tc.rel, got, tc.want)
		}
	}
}
