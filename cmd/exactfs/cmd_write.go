package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"strconv"

	"github.com/exactfs/exactfs"
)

type writeOptions struct {
	noReplace  bool
	expect     string
	mode       modeFlag
	allowEmpty bool
}

// modeFlag is an octal permission flag that remembers whether it was given.
type modeFlag struct {
	perm fs.FileMode
	set  bool
}

func (m *modeFlag) String() string {
	if m == nil || !m.set {
		return ""
	}
	return fmt.Sprintf("%04o", m.perm)
}

func (m *modeFlag) Set(s string) error {
	v, err := strconv.ParseUint(s, 8, 32)
	if err != nil || v > 0o777 {
		return fmt.Errorf("want octal permission bits such as 0600, got %q", s)
	}
	m.perm, m.set = fs.FileMode(v), true
	return nil
}

func init() {
	register(&command{
		name:    "write",
		summary: "replace a file atomically and durably with stdin (or create it, or compare-and-swap)",
		usage:   "write [--no-replace | --expect ID] [--mode MODE] [--allow-empty] PATH",
		help: `Write stdin to PATH so that PATH always holds either the old bytes or all of
the new ones, even across a crash or power cut: the data is staged under a
private name beside PATH, fsynced, renamed into place, and the directory is
fsynced. On success the identity of the new file is printed on stdout, ready
for a later --expect. Stdin is streamed to the staging file, never held in
memory whole: a big input costs disk space, and a full disk fails the write
with PATH unchanged.

Modes:
  (default)       replace PATH, or create it
  --no-replace    create PATH; if anything is there, change nothing (exit 76)
  --expect ID     replace PATH only if it is exactly ID from 'exactfs stat'
                  (every field, ctime included); otherwise exit 76 and change
                  nothing. The successor is swapped in by an atomic exchange,
                  so PATH is never missing; it keeps the predecessor's mode.

The new file's mode is exactly --mode (the umask does not narrow it, as with
install -m), else the mode of the file being replaced, else 0600. A replacement keeps the owner and group of the file it replaces, so root's
one-off write of a service's file leaves it the service's; a user who cannot
give it that owner (another user's file) or group (one the user is not in) is
refused (exit 74) and nothing changes. A symlink, FIFO or directory at PATH is
refused (exit 77) and left alone. So is a file with more than one name (a hard
link), in every mode: replacing one name would leave the others with the old
bytes (exit 77, nothing changed; the hint says how to find the other names).

Empty stdin is refused (exit 65) and PATH is left untouched: it is nearly
always a producer that failed, as in 'curl -fsS URL | exactfs write PATH'
without pipefail, and would wipe the file. --allow-empty writes an empty file.

Examples:
  echo '{"n":0}' | exactfs write --no-replace counter.json
  id=$(exactfs stat --id counter.json)
  echo '{"n":1}' | exactfs write --expect "$id" counter.json`,
		flags: func(fs *flagSet) any {
			o := &writeOptions{}
			fs.BoolVar(&o.noReplace, "no-replace", false, "create PATH, never replace it")
			fs.StringVar(&o.expect, "expect", "", "replace PATH only if it is exactly `ID`")
			fs.Var(&o.mode, "mode", "permission bits of the new file, octal (`MODE`, e.g. 0644)")
			fs.BoolVar(&o.allowEmpty, "allow-empty", false, "let empty stdin replace PATH with an empty file (without it, empty stdin is\nrefused and PATH is left untouched)")
			return o
		},
		run: runWrite,
	})
}

func runWrite(e *env, opts any, args []string) error {
	o := opts.(*writeOptions)
	if len(args) != 1 {
		return usagef("want exactly one PATH, got %d arguments", len(args))
	}
	if o.noReplace && o.expect != "" {
		return usagef("--no-replace and --expect exclude each other")
	}
	if o.expect != "" && o.mode.set {
		return usagef("--mode cannot be used with --expect: the new file keeps the mode of the one it replaces")
	}
	var want exactfs.Identity
	if o.expect != "" {
		var err error
		if want, err = exactfs.ParseIdentity(o.expect); err != nil {
			return usagef("--expect: %v", err)
		}
	}
	path := args[0]
	// Stdin is streamed into the staging file (ContentFrom), never held
	// whole: a producer of gigabytes fills the disk, not memory. Its first
	// byte is waited for here, so empty stdin is refused before anything
	// is opened, as before.
	in := bufio.NewReaderSize(e.stdin, 64<<10)
	if _, err := in.Peek(1); err == io.EOF {
		if !o.allowEmpty {
			return emptyInput{path}
		}
	} else if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	from := exactfs.ContentFrom(in)
	var id exactfs.Identity
	err := withParent(path, func(d *exactfs.Dir, name string) error {
		var err error
		switch {
		case o.expect != "":
			id, err = d.ReplaceExpected(name, nil, want, from)
		case o.noReplace:
			id, err = d.Publish(name, nil, o.perm(d, name), exactfs.ExactPerm(), from)
		default:
			if err := refuseHardLink(d, name, "write", path); err != nil {
				return err
			}
			id, err = d.WriteFile(name, nil, o.perm(d, name), exactfs.ExactPerm(), exactfs.DirOwnerForNewFile(), from)
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, id.String())
	noteRootOwned(e, "write", path)
	return nil
}

// perm is the mode for a new file: as asked, else the mode of the regular
// file being replaced (a replace should not silently change who may read
// it), else owner-only.
func (o *writeOptions) perm(d *exactfs.Dir, name string) fs.FileMode {
	if o.mode.set {
		return o.mode.perm
	}
	if fi, err := d.Lstat(name); err == nil && fi.Mode().IsRegular() {
		return fi.Mode().Perm()
	}
	return 0o600
}

// emptyInput is write's refusal of empty stdin without --allow-empty
// (exit 65, as update's emptyOutput): a producer that failed upstream of a
// pipe must not wipe the file.
type emptyInput struct{ path string }

func (e emptyInput) Error() string {
	return fmt.Sprintf("stdin was empty; %s was left untouched", e.path)
}

// refuseHardLink refuses to replace name beneath d when it is a regular
// file with more than one name: every exactfs replace puts a new inode at
// one name, so the other names would silently keep the old bytes.
// ReplaceExpected and rm --expect refuse such a file in the library; write
// and update refuse it here, so the answer is the same everywhere (exit
// 77, nothing changed). A link made after this look is not seen: only
// the lock (for update) or the caller can keep names from appearing.
func refuseHardLink(d *exactfs.Dir, name, op, path string) error {
	// An lstat, not IdentityOf: that read and hashed the whole file once
	// more before every update (a second full pass over a large state
	// file); the write proves what it replaces itself.
	st, err := d.LstatRaw(name)
	if err != nil || !st.Mode.IsRegular() || st.Nlink <= 1 {
		return nil // absent, or refused by the write itself with its own words
	}
	return &exactfs.Error{Op: op, Path: path, Code: exactfs.CodeHardLinkUnsupported,
		Detail: fmt.Sprintf("it has %d names (hard links); replacing this one would leave the others with the old bytes, so nothing was changed", st.Nlink)}
}
