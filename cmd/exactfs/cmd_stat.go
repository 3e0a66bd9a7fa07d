package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"github.com/exactfs/exactfs"
)

type statOptions struct {
	json   bool
	idOnly bool
}

func init() {
	register(&command{
		name:    "stat",
		summary: "print the identity of a file (the ID that rm --expect and write --expect take)",
		usage:   "stat [--json | --id] PATH",
		help: `Print what exactfs proves about PATH: device and inode, link count, size,
times, mode and, for a regular file, the SHA-256 of its bytes, all read through
one no-follow descriptor. The ID line is the whole identity as one word; give
it to 'exactfs rm --expect' or 'exactfs write --expect' to act on PATH only
while it is still exactly this file.

A symlink anywhere in PATH, or a FIFO, socket or device at PATH, is refused
(exit 77) without being opened for reading or followed.

JSON output (--json), one object:
  {"path": "state.json",          the path as given
   "kind": "file",                "file" or "directory"
   "id": "v1:803:1234:1:42:...",  the identity, for --expect
   "dev": 2051, "ino": 1234, "nlink": 1, "size": 42,
   "mode": "0600",                permission bits, octal
   "mtime_ns": 1764678600123456789, "ctime_ns": 1764678600123456789,
   "sha256": "9f86d0..."}         files only

Examples:
  exactfs stat state.json
  id=$(exactfs stat --id state.json) && exactfs rm --expect "$id" state.json`,
		flags: func(fs *flagSet) any {
			o := &statOptions{}
			fs.BoolVar(&o.json, "json", false, "print one JSON object (schema above)")
			fs.BoolVar(&o.idOnly, "id", false, "print only the ID")
			return o
		},
		run: runStat,
	})
}

// statJSON is the stable JSON form of "exactfs stat --json".
type statJSON struct {
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	ID      string `json:"id"`
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Nlink   uint64 `json:"nlink"`
	Size    int64  `json:"size"`
	Mode    string `json:"mode"`
	MtimeNs int64  `json:"mtime_ns"`
	CtimeNs int64  `json:"ctime_ns"`
	SHA256  string `json:"sha256,omitempty"`
}

func runStat(e *env, opts any, args []string) error {
	o := opts.(*statOptions)
	if len(args) != 1 {
		return usagef("want exactly one PATH, got %d arguments", len(args))
	}
	if o.json && o.idOnly {
		return usagef("--json and --id exclude each other")
	}
	path := args[0]
	id, kind, err := identify(path)
	if err != nil {
		return err
	}
	switch {
	case o.idOnly:
		fmt.Fprintln(e.stdout, id.String())
	case o.json:
		j := statJSON{Path: path, Kind: kind, ID: id.String(), Dev: id.Dev, Ino: id.Ino, Nlink: id.Nlink,
			Size: id.Size, Mode: fmt.Sprintf("%04o", id.Mode.Perm()), MtimeNs: id.MtimeNs, CtimeNs: id.CtimeNs}
		if kind == "file" {
			j.SHA256 = hex.EncodeToString(id.SHA256[:])
		}
		enc := json.NewEncoder(e.stdout)
		return enc.Encode(j)
	default:
		fmt.Fprintf(e.stdout, "path:   %s\nkind:   %s\nid:     %s\n", path, kind, id)
		fmt.Fprintf(e.stdout, "inode:  %d on device %x, %d link(s)\n", id.Ino, id.Dev, id.Nlink)
		fmt.Fprintf(e.stdout, "size:   %d bytes\nmode:   %s (%04o)\n", id.Size, id.Mode, id.Mode.Perm())
		fmt.Fprintf(e.stdout, "mtime:  %s\nctime:  %s\n", nsTime(id.MtimeNs), nsTime(id.CtimeNs))
		if kind == "file" {
			fmt.Fprintf(e.stdout, "sha256: %x\n", id.SHA256)
		}
	}
	return nil
}

// identify proves the identity of the regular file or directory at path.
// The kind is learned without following a link, and then proved again from
// the descriptor the identity is read through.
func identify(path string) (exactfs.Identity, string, error) {
	d, name, err := openParent(path)
	if err != nil {
		return exactfs.Identity{}, "", err
	}
	if d == nil {
		return dirIdentity(path)
	}
	defer d.Close()
	fi, err := d.Lstat(name)
	if err != nil {
		return exactfs.Identity{}, "", err
	}
	if fi.IsDir() {
		return dirIdentity(path)
	}
	if !fi.Mode().IsRegular() {
		return exactfs.Identity{}, "", refusedType("stat", path, fi.Mode())
	}
	id, err := d.IdentityOf(name)
	return id, "file", err
}

func dirIdentity(path string) (exactfs.Identity, string, error) {
	d, err := exactfs.OpenDir(exactfs.SystemPath(path))
	if err != nil {
		return exactfs.Identity{}, "", err
	}
	defer d.Close()
	id, err := d.Stat()
	return id, "directory", err
}

// refusedType is the error for a path occupied by something exactfs will not
// open: it names what was found.
func refusedType(op, path string, m fs.FileMode) error {
	code := exactfs.CodeNotRegularFile
	if m&fs.ModeSymlink != 0 {
		code = exactfs.CodeReparsePoint
	}
	return &exactfs.Error{Op: op, Path: path, Code: code,
		Detail: "it is " + exactfs.KindName(m) + "; refusing to open it"}
}

func nsTime(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
