// Package winpath holds the rules for Windows paths and names that exactfs
// applies before any system call (issue 22 step 2).
//
// exactfs opens every component relative to a directory handle with an NT
// call, which takes a name exactly as given. Win32 programs (the
// TypeScript reference under Node, Explorer, cmd.exe) resolve the same
// text through Win32 rules first: trailing dots and spaces are stripped,
// CON, NUL, COM1 and the other DOS device names open a device whatever
// their directory or extension, "name:stream" is an alternate data stream
// of name. A name on which the two disagree would make exactfs and a peer
// lock, read or delete different objects under one name, so such a name
// is refused, with what was found and what to do, and never rewritten.
// Path forms whose meaning depends on process state or bypasses these
// rules are refused the same way: drive-relative "C:x", "\x" (the current
// drive's root), and the device namespaces "\\?\", "\\.\" and "\??\".
//
// The package is pure string logic, so its rules are tested on every
// platform; only Windows builds of exactfs call it.
package winpath

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxNameUnits is the longest component NTFS (and ReFS, FAT32, exFAT)
// accepts, in UTF-16 code units.
const MaxNameUnits = 255

// ErrNotUTF8 is matched (errors.Is) by the error for a name that is not
// valid UTF-8: Windows names are UTF-16, and Go would turn each invalid
// byte into U+FFFD, so the file created would have another name than the
// one asked for, and two different byte strings could name one file.
var ErrNotUTF8 = errors.New("name is not valid UTF-8")

// Error says which path, and which component of it, breaks which rule.
type Error struct {
	Path    string // the path as given
	Name    string // the offending component; empty when the path's form is wrong
	Reason  string // what is wrong and what to do
	notUTF8 bool
}

func (e *Error) Error() string {
	if e.Name == "" || e.Name == e.Path {
		return fmt.Sprintf("%s: %s", strconv.Quote(e.Path), e.Reason)
	}
	return fmt.Sprintf("%s: component %s %s", strconv.Quote(e.Path), strconv.Quote(e.Name), e.Reason)
}

// Is matches ErrNotUTF8 for a name that is not valid UTF-8.
func (e *Error) Is(target error) bool { return e.notUTF8 && target == ErrNotUTF8 }

// Path is a Windows path taken apart.
type Path struct {
	// Volume is "" for a relative path, "C:" (as given, any case) for a
	// drive-absolute one, and `\\server\share` for a UNC one.
	Volume string
	// Comps are the components after the volume, each one valid for
	// CheckName; "." components are dropped.
	Comps []string
}

// IsAbs reports whether p names its volume.
func (p Path) IsAbs() bool { return p.Volume != "" }

// IsUNC reports whether p is on a network share.
func (p Path) IsUNC() bool { return strings.HasPrefix(p.Volume, `\\`) }

// Parse takes path apart into its volume and its components, both "\" and
// "/" separating them, and refuses (with an *Error) every form and every
// component a Win32 program could resolve to another object than an NT
// open relative to a handle would:
//
//   - an empty path, a NUL byte, invalid UTF-8;
//   - the device namespaces `\\?\`, `\\.\`, `\??\` (they skip the rules
//     below, and can name devices and other volumes' objects);
//   - "C:" or "C:x" (relative to the drive's current directory, which is
//     per-process state), and "\x" (the current drive's root);
//   - a UNC path without both a server and a share;
//   - a ".." component (a walk that may climb can be steered out of the
//     directory the caller meant);
//   - any component CheckName refuses.
func Parse(path string) (Path, error) {
	fail := func(name, reason string) (Path, error) {
		return Path{}, &Error{Path: path, Name: name, Reason: reason}
	}
	switch {
	case path == "":
		return fail("", "is empty; name a file or directory")
	case strings.IndexByte(path, 0) >= 0:
		return fail("", "contains a NUL byte")
	case !utf8.ValidString(path):
		return Path{}, &Error{Path: path, Reason: "is not valid UTF-8: Windows names are UTF-16, and an invalid byte would become another character; name it in UTF-8", notUTF8: true}
	}
	p := strings.ReplaceAll(path, "/", `\`)
	var vol, rest string
	switch {
	case strings.HasPrefix(p, `\\?\`), strings.HasPrefix(p, `\\.\`), strings.HasPrefix(p, `\??\`):
		return fail("", `is in a Windows device namespace (\\?\, \\.\ or \??\), which skips the checks on names and can reach devices; use a plain path such as C:\dir\file or \\server\share\file`)
	case strings.HasPrefix(p, `\\`):
		parts := strings.SplitN(p[2:], `\`, 3)
		if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
			return fail("", `is a network path without both a server and a share; write \\server\share\...`)
		}
		for _, part := range parts[:2] {
			if err := CheckName(part); err != nil {
				return fail(part, err.(*Error).Reason)
			}
		}
		vol = `\\` + parts[0] + `\` + parts[1]
		if len(parts) == 3 {
			rest = parts[2]
		}
	case len(p) >= 2 && p[1] == ':' && isLetter(p[0]):
		if len(p) == 2 || p[2] != '\\' {
			return fail("", "is relative to the current directory of drive "+p[:2]+", which each process keeps for itself; write "+p[:2]+`\ and the full path`)
		}
		vol, rest = p[:2], p[3:]
	case strings.HasPrefix(p, `\`):
		return fail("", `starts at the root of the current drive, which depends on the process's current directory; write the drive, as in C:\...`)
	default:
		rest = p
	}
	out := Path{Volume: vol}
	for _, c := range strings.Split(rest, `\`) {
		switch c {
		case "", ".":
			continue
		case "..":
			return fail(c, `is refused: name the path without climbing`)
		}
		if err := CheckName(c); err != nil {
			e := err.(*Error)
			return Path{}, &Error{Path: path, Name: c, Reason: e.Reason, notUTF8: e.notUTF8}
		}
		out.Comps = append(out.Comps, c)
	}
	return out, nil
}

// CheckName returns an *Error if name, one component of a path, is not a
// name every Windows program resolves to the same object as an NT open of
// that exact text does: empty, "." or "..", a separator ("\" or "/"), ":"
// (an alternate data stream), the characters < > " | ? * or a control
// character (0-31), a trailing dot or space (stripped by Win32), a DOS
// device name with or without an extension (CON, PRN, AUX, NUL, COM0-COM9,
// LPT0-LPT9 and their superscript forms, CONIN$, CONOUT$), invalid UTF-8,
// or more than MaxNameUnits UTF-16 code units.
func CheckName(name string) error {
	fail := func(reason string) error { return &Error{Path: name, Name: name, Reason: reason} }
	switch name {
	case "":
		return fail("is empty")
	case ".", "..":
		return fail("is not a name")
	}
	if !utf8.ValidString(name) {
		return &Error{Path: name, Name: name, Reason: "is not valid UTF-8: Windows names are UTF-16, and an invalid byte would become another character; name it in UTF-8", notUTF8: true}
	}
	for _, r := range name {
		switch {
		case r == ':':
			return fail(`contains ":", which NTFS reads as name:stream, an alternate data stream of another file rather than a file of its own; remove it`)
		case r == '\\' || r == '/':
			return fail("contains a path separator")
		case r < 32:
			return fail(fmt.Sprintf("contains the control character %U, which Windows does not allow in names", r))
		case strings.ContainsRune(`<>"|?*`, r):
			return fail(fmt.Sprintf("contains %q, which Windows does not allow in names (wildcards and redirection)", r))
		}
	}
	switch last := name[len(name)-1]; last {
	case '.', ' ':
		what := "dot"
		if last == ' ' {
			what = "space"
		}
		stripped := strings.TrimRight(name, ". ")
		if stripped == "" {
			return fail("is only dots and spaces, which Win32 programs strip to nothing; choose another name")
		}
		return fail(fmt.Sprintf("ends in a %s, which Win32 programs strip: they would open %s instead; remove the trailing %s",
			what, strconv.Quote(stripped), what))
	}
	if dev := deviceName(name); dev != "" {
		return fail(fmt.Sprintf("is the DOS device name %s%s: Win32 programs open the device %s, not a file, in every directory; choose another name",
			dev, map[bool]string{true: " with an extension", false: ""}[len(name) > len(dev)], dev))
	}
	if n := len(utf16.Encode([]rune(name))); n > MaxNameUnits {
		return fail(fmt.Sprintf("is %d UTF-16 code units long; Windows file systems allow at most %d", n, MaxNameUnits))
	}
	return nil
}

// deviceName returns the DOS device name name stands for ("NUL" for
// "nul.txt" or "NUL .tar.gz"), or "". Win32 compares the part before the
// first dot, with trailing spaces removed, case-insensitively.
func deviceName(name string) string {
	base, _, _ := strings.Cut(name, ".")
	base = strings.ToUpper(strings.TrimRight(base, " "))
	switch base {
	case "CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$":
		return base
	}
	if len(base) >= 4 && (strings.HasPrefix(base, "COM") || strings.HasPrefix(base, "LPT")) {
		switch base[3:] {
		case "0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "¹", "²", "³":
			return base
		}
	}
	return ""
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
