package exactfs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// Private names. Every implementation that shares a directory recognizes
// them as residue of an interrupted operation, never as user data, so a
// reaper can find them and a directory scan can skip them. This file is the
// one place they are spelled; ClassifyName is the one place they are
// recognized.
const (
	// PlaceholderPrefix starts the name of an empty placeholder detached
	// from a canonical name during exact unlink.
	PlaceholderPrefix = ".gjc-exact-unlink-placeholder-"
	// RemovingSuffix ends the name of a directory tree detached for removal.
	RemovingSuffix = ".removing"
	// StagingSuffix ends the name of a file staged by Publish.
	StagingSuffix = ".staging"
	// ReplacementSuffix ends the name of a file staged by WriteFile or
	// ReplaceExpected.
	ReplacementSuffix = ".replacement"

	// PrivatePrefix starts every private name that is not named after its
	// destination. TypeScript peers and the CLI's status skip such names.
	PrivatePrefix = ".gjc-"
	// QuarantinePrefix starts the family of names an exact unlink detaches
	// an object to before it deletes it. TypeScript peers skip these names
	// when they scan a directory of state files, so a crash between the
	// detach and the delete leaves nothing they would mistake for a state
	// file.
	QuarantinePrefix = ".gjc-delete-"
	// LockQuarantinePrefix starts (and LockQuarantineSuffix ends) the name
	// an owner record of a state lock is detached to (the reference's
	// spelling).
	LockQuarantinePrefix = QuarantinePrefix + "session-state-lock-"
	LockQuarantineSuffix = ".json"
	// SparePrefix starts the name of the spare claim directory of a state
	// lock: SparePrefix + "F.lock.transition".
	SparePrefix = QuarantinePrefix + "state-lock-spare-"
	// StoreRetirePrefix starts the quarantine name of a store's exact
	// unlinks; LeaseRetirePrefix that of lease reclaims. Unlike the
	// QuarantinePrefix family, what they hold may keep its bytes when its
	// remover died (see store.Reap).
	StoreRetirePrefix = PrivatePrefix + "store-retire-"
	LeaseRetirePrefix = PrivatePrefix + "lock-retire-"
	// LeaseSuffix ends the file name of a lease lock.
	LeaseSuffix = ".lock"
	// DirLockName is the empty file Dir.TryLock locks on Windows, inside
	// the directory it locks (Windows locks no directory handle; see
	// dirlock_windows.go). It is made on first use and never removed:
	// removing a lock file others may hold open breaks the exclusion.
	DirLockName = PrivatePrefix + "dir-lock"

	// treeEntryPrefix and rmPrefix start the quarantine names of a tree
	// removal's entries and of the CLI's rm.
	treeEntryPrefix = QuarantinePrefix + "tree-entry-"
	rmPrefix        = QuarantinePrefix + "exactfs-rm-"
	// MovePrefix starts the name an exact directory move passes through
	// (Dir.MoveEmptyDir): one only its mover knows.
	MovePrefix = QuarantinePrefix + "movedir-"
)

// NameKind is what a private name is; see ClassifyName.
type NameKind int

// The kinds of names ClassifyName tells apart. Where a name could be read
// two ways, the first kind in this list wins (a staging name that happens
// to start with ".gjc-" is a staging name).
const (
	// NamePublic is every name that is not private: user data.
	NamePublic NameKind = iota
	// NameStaging is ".<target>.<uuid>.staging" or ".replacement".
	NameStaging
	// NameStoreRetire and NameLeaseRetire start with StoreRetirePrefix
	// and LeaseRetirePrefix.
	NameStoreRetire
	NameLeaseRetire
	// NamePlaceholder starts with PlaceholderPrefix.
	NamePlaceholder
	// NameLockQuarantine is LockQuarantinePrefix + … + LockQuarantineSuffix.
	NameLockQuarantine
	// NameSpare is SparePrefix + <target>, the claim it is the spare of.
	NameSpare
	// NameMoveDir is MovePrefix + a UUID: the name Dir.MoveEmptyDir passes
	// a directory through between its two renames (left behind, empty,
	// when its mover is killed between them).
	NameMoveDir
	// NameQuarantine is any other name starting with QuarantinePrefix.
	NameQuarantine
	// NameFenceLease is ".gjc-<target>.lock", a store's fence lease
	// (FenceLeaseName); target is the fence's name.
	NameFenceLease
	// NamePrivate is any other name starting with PrivatePrefix: a name of
	// the private family this version does not know.
	NamePrivate
	// NameTemp is "<target>.tmp-<pid>-<uuid>", a TypeScript peer's temp
	// file of the state file target, written by process Pid.
	NameTemp
	// NameRemoving is "<target>.removing", a tree detached for removal.
	NameRemoving
	// NameDirLock is DirLockName, the file a directory's lock is taken
	// on where directories take no lock (Windows): not residue, not data.
	NameDirLock
)

var nameKinds = [...]string{"public", "staging", "store-retire", "lease-retire", "placeholder",
	"lock-quarantine", "spare", "movedir", "quarantine", "fence-lease", "private", "temp", "removing", "dir-lock"}

// String returns a short lower-case name of the kind.
func (k NameKind) String() string {
	if k >= 0 && int(k) < len(nameKinds) {
		return nameKinds[k]
	}
	return fmt.Sprintf("NameKind(%d)", int(k))
}

// PrivateName is what ClassifyName found in a name.
type PrivateName struct {
	Kind NameKind
	// Target is the name the private name belongs to, where its spelling
	// says: the destination of a staging name, the state file of a temp
	// file, the tree of a removing name, the claim of a spare, the fence of
	// a fence lease. It is "" for the other kinds.
	Target string
	// Pid is the writer's pid of a NameTemp, else 0.
	Pid int
}

// ClassifyName says whether name is a private name and which. It looks at
// the spelling only: what is behind the name is for the caller to prove.
func ClassifyName(name string) PrivateName {
	if dest, ok := StagingTarget(name); ok {
		return PrivateName{Kind: NameStaging, Target: dest}
	}
	switch {
	case strings.HasPrefix(name, StoreRetirePrefix):
		return PrivateName{Kind: NameStoreRetire}
	case strings.HasPrefix(name, LeaseRetirePrefix):
		return PrivateName{Kind: NameLeaseRetire}
	case strings.HasPrefix(name, PlaceholderPrefix):
		return PrivateName{Kind: NamePlaceholder}
	case strings.HasPrefix(name, LockQuarantinePrefix) && strings.HasSuffix(name, LockQuarantineSuffix):
		return PrivateName{Kind: NameLockQuarantine}
	case strings.HasPrefix(name, SparePrefix):
		return PrivateName{Kind: NameSpare, Target: name[len(SparePrefix):]}
	case strings.HasPrefix(name, MovePrefix):
		return PrivateName{Kind: NameMoveDir}
	case strings.HasPrefix(name, QuarantinePrefix):
		return PrivateName{Kind: NameQuarantine}
	case name == DirLockName:
		return PrivateName{Kind: NameDirLock}
	case strings.HasPrefix(name, PrivatePrefix):
		if t, ok := strings.CutSuffix(name[len(PrivatePrefix):], LeaseSuffix); ok && t != "" {
			return PrivateName{Kind: NameFenceLease, Target: t}
		}
		return PrivateName{Kind: NamePrivate}
	}
	if t, pid, ok := tempTarget(name); ok {
		return PrivateName{Kind: NameTemp, Target: t, Pid: pid}
	}
	if t, ok := strings.CutSuffix(name, RemovingSuffix); ok && t != "" {
		return PrivateName{Kind: NameRemoving, Target: t}
	}
	return PrivateName{}
}

// tempTarget parses a TypeScript peer's temp file name,
// "<target>.tmp-<pid>-<uuid>" with a pid of 1 to 10 digits without a
// leading zero.
func tempTarget(name string) (target string, pid int, ok bool) {
	if len(name) < 36 || !isUUID(name[len(name)-36:]) {
		return "", 0, false
	}
	rest, ok := strings.CutSuffix(name[:len(name)-36], "-")
	if !ok {
		return "", 0, false
	}
	i := strings.LastIndex(rest, ".tmp-")
	if i < 1 {
		return "", 0, false
	}
	digits := rest[i+len(".tmp-"):]
	if len(digits) < 1 || len(digits) > 10 || digits[0] == '0' {
		return "", 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return "", 0, false
		}
		pid = pid*10 + int(c-'0')
	}
	return rest[:i], pid, true
}

// LockQuarantineName is a fresh name to detach a state lock's owner record
// to.
func LockQuarantineName() string { return LockQuarantinePrefix + NewUUID() + LockQuarantineSuffix }

// SpareName is the spare claim directory's name for a claim name, or ""
// when it would be longer than a file name may be.
func SpareName(claim string) string {
	if n := SparePrefix + claim; len(n) <= 255 {
		return n
	}
	return ""
}

// StoreRetireName is a fresh quarantine name for a store's exact unlinks.
func StoreRetireName() string { return StoreRetirePrefix + NewUUID() }

// LeaseRetireName is a fresh quarantine name for reclaiming a lease, with
// the reclaimer's pid in it.
func LeaseRetireName() string {
	return fmt.Sprintf("%s%d-%s", LeaseRetirePrefix, os.Getpid(), NewUUID())
}

// FenceLeaseName is the lease name (the file is this plus LeaseSuffix) of a
// store's mutation fence called name.
func FenceLeaseName(name string) string { return PrivatePrefix + name }

// moveAsideName is a fresh name for Dir.MoveEmptyDir's way through.
func moveAsideName() string { return MovePrefix + NewUUID() }

// RmQuarantineName is a fresh quarantine name for the CLI's rm.
func RmQuarantineName() string { return rmPrefix + NewUUID() }

// NewUUID returns a random (version 4) UUID in its canonical text form.
func NewUUID() string {
	var u [36]byte
	newUUID(&u)
	return string(u[:])
}

// newUUID writes a fresh NewUUID into u, so that a name around it is built
// with one allocation (stagingName).
func newUUID(u *[36]byte) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("exactfs: crypto/rand failed: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	hex.Encode(u[0:8], b[0:4])
	u[8] = '-'
	hex.Encode(u[9:13], b[4:6])
	u[13] = '-'
	hex.Encode(u[14:18], b[6:8])
	u[18] = '-'
	hex.Encode(u[19:23], b[8:10])
	u[23] = '-'
	hex.Encode(u[24:36], b[10:16])
}

func stagingName(base, suffix string) string {
	var u [36]byte
	newUUID(&u)
	return "." + base + "." + string(u[:]) + suffix
}

// treeEntryQuarantine is where an exact tree removal moves a file of the
// detached tree while it deletes it (the exact unlink's quarantine name).
// It lives inside <dir>.removing, which is residue already.
func treeEntryQuarantine() string { return treeEntryPrefix + NewUUID() }

func placeholderName(dev, ino uint64) string {
	return fmt.Sprintf("%s%x-%x", PlaceholderPrefix, dev, ino)
}

// StagingTarget reports whether name is a staging name written by Publish,
// WriteFile or ReplaceExpected, and for which destination.
func StagingTarget(name string) (dest string, ok bool) {
	for _, suf := range []string{StagingSuffix, ReplacementSuffix} {
		rest, found := strings.CutSuffix(name, suf)
		if !found || !strings.HasPrefix(rest, ".") || len(rest) < 1+1+37 {
			continue
		}
		uuid := rest[len(rest)-36:]
		if rest[len(rest)-37] != '.' || !isUUID(uuid) {
			continue
		}
		return rest[1 : len(rest)-37], true
	}
	return "", false
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdef", c) {
				return false
			}
		}
	}
	return true
}

// validQuarantine checks that a caller-chosen quarantine name is one plain
// path component that cannot be confused with the target.
func validQuarantine(op, path, q, base string) error {
	if q == "" || q == "." || q == ".." || strings.ContainsAny(q, "/\x00") || q == base {
		return newErr(op, path, CodeInvalidRequest, fmt.Sprintf("quarantine name %q must be one path component other than the target", q))
	}
	return nil
}
