package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/exactfs/exactfs"
	"github.com/exactfs/exactfs/liveness"
)

// recordExtras are the owner record's fields that statelock.Inspect does
// not hand out and that only help a person find the holder: the pid
// namespace the pid belongs to and the boot the record was written in.
type recordExtras struct {
	PidNS  uint64 `json:"pid_ns"`
	BootID string `json:"boot_id"`
}

// readRecordExtras reads them from the owner record at lockPath through a
// no-follow descriptor, bounded like every record read (CaptureRecord).
// ok is false when there is no readable record.
func readRecordExtras(lockPath string) (recordExtras, bool) {
	var r recordExtras
	d, name, err := openParent(lockPath)
	if err != nil || d == nil {
		return r, false
	}
	defer d.Close()
	b, _, err := d.CaptureRecord(name)
	if err != nil || json.Unmarshal(b, &r) != nil {
		return r, false
	}
	return r, true
}

// otherPidNS reports whether a record's pid namespace is known and is not
// this process's: its pid then names nothing a ps here shows.
func otherPidNS(ns uint64) bool {
	if ns == 0 {
		return false
	}
	ours, err := liveness.PidNS(os.Getpid())
	return err == nil && ours != 0 && ours != ns
}

// thisBoot reports whether a record's boot id is this machine's current
// one: a record naming another host id then was almost certainly written
// here, under another config root.
func thisBoot(boot string) bool {
	if boot == "" {
		return false
	}
	ours, err := liveness.BootID()
	return err == nil && ours == boot
}

// pidWhere is how a holder's pid is named for a person: "pid 1 in another
// pid namespace (ns 4026532176)" when it is not one a ps here would show.
func pidWhere(pid int64, ns uint64) string {
	if otherPidNS(ns) {
		return fmt.Sprintf("pid %d in another pid namespace (ns %d)", pid, ns)
	}
	return fmt.Sprintf("pid %d", pid)
}

// fileOwner returns the owner and mode of the object at path (lstat, so
// it works on a file this user may not open), or ok false.
func fileOwner(path string) (uid uint32, mode fs.FileMode, ok bool) {
	if runtime.GOOS == "windows" {
		return 0, 0, false
	}
	fi, err := exactfs.Lstat(path)
	if err != nil {
		return 0, 0, false
	}
	id, isID := fi.Sys().(exactfs.Identity)
	if !isID {
		return 0, 0, false
	}
	return id.Uid, id.Mode.Perm(), true
}

// uidName is "uid 1000 (alice)", or "uid 1000" when the name is unknown.
func uidName(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return fmt.Sprintf("uid %d", uid)
}

// othersRecord describes a lock file at path that belongs to another uid
// and that this process may not open, or returns "" when it is this
// user's (or its owner cannot be read).
func othersRecord(path string) string {
	uid, mode, ok := fileOwner(path)
	if !ok || os.Geteuid() < 0 || int(uid) == os.Geteuid() {
		return ""
	}
	return fmt.Sprintf("%s belongs to %s (mode %04o), and this process runs as %s", filepath.Base(path), uidName(uid), mode, uidName(uint32(os.Geteuid())))
}

// innermostPath is the path named by the innermost exactfs error in err
// (the file a lock step failed on, below the lock's own error), or "".
func innermostPath(err error) string {
	last := ""
	for err != nil {
		var xe *exactfs.Error
		if !errors.As(err, &xe) {
			break
		}
		if xe.Path != "" {
			last = xe.Path
		}
		err = xe.Err
	}
	return last
}

// stateFileOf is the state file a lock path belongs to.
func stateFileOf(lockPath string) string { return strings.TrimSuffix(lockPath, ".lock") }
