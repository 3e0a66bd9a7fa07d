package main

import (
	"os"
	"path/filepath"
	"strings"
)

// checkPathArgs applies the CLI's one rule for the paths it is given,
// before anything is opened: a path with a ".." component is refused by
// every command, relative or absolute. exactfs walks a path one
// component at a time and follows no symlink, and ".." after a symlink
// means the parent of the symlink's target, not what the text says, so the
// library refuses to climb; the CLI used to clean an absolute path
// lexically first for some commands and not for others. The refusal
// offers the path the kernel would have reached (the same path, with the
// directories resolved), for the user to check and pass instead. The
// first argument of lock and update (STATEFILE) must also name a file: a
// lock is STATEFILE.lock beside it, and "." or "dir/" has no such place.
func checkPathArgs(c *command, pos []string) error {
	if c.local || c.name == "help" || len(pos) == 0 {
		return nil
	}
	paths := pos
	if c.takesCmd {
		paths = pos[:1]
	}
	for _, p := range paths {
		if p == "--" {
			break
		}
		if hasDotDot(p) {
			return usagef("%q climbs with '..', which exactfs refuses (a symlink before it would make it mean another place); %s", p, physicalPath(p))
		}
	}
	if c.takesCmd && namesDirectory(pos[0]) {
		return usagef("STATEFILE %q names a directory, not a file: the lock is STATEFILE.lock beside its state file, "+
			"so name a file (%s) or, to lock a directory by its name, give it without a trailing /", pos[0], filepath.Join(pos[0], "job.state"))
	}
	return nil
}

// hasDotDot reports whether path has a ".." component.
func hasDotDot(path string) bool {
	for _, c := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == filepath.Separator }) {
		if c == ".." {
			return true
		}
	}
	return false
}

// namesDirectory reports whether path, as written, can only name a
// directory: ".", "/", or a trailing separator.
func namesDirectory(path string) bool {
	if path == "" {
		return false
	}
	b := filepath.Base(path)
	return b == "." || b == string(filepath.Separator) || strings.HasSuffix(path, "/") || strings.HasSuffix(path, string(filepath.Separator))
}

// physicalPath offers the path the kernel reaches for path: its directory
// resolved (symlinks and ".." as the kernel takes them) and made absolute,
// then the final name. When the directory cannot be resolved it says so.
func physicalPath(path string) string {
	// Split by hand: filepath.Dir would clean "link/.." away lexically,
	// which is the very reading being refused.
	isSep := func(r rune) bool { return r == '/' || r == filepath.Separator }
	trimmed := strings.TrimRightFunc(path, isSep)
	dir, base := ".", trimmed
	if i := strings.LastIndexFunc(trimmed, isSep); i >= 0 {
		dir, base = trimmed[:i+1], trimmed[i+1:]
	}
	if base == ".." || base == "." {
		dir, base = trimmed, ""
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "its directory " + dir + " cannot be resolved here (" + errorsText(err) + "); give the path without '..'"
	}
	if abs, err := filepath.Abs(resolved); err == nil {
		resolved = abs
	}
	if base != "" {
		resolved = filepath.Join(resolved, base)
	}
	if _, err := os.Lstat(resolved); err != nil && base == "" {
		return "give the path without '..'"
	}
	return "this names " + resolved + ": pass that instead"
}

func errorsText(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err.Error()
	}
	return err.Error()
}
