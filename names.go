package exactfs

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
)

// Private names. Every implementation that shares a directory recognizes
// them as residue of an interrupted operation, never as user data, so a
// reaper can find them and a directory scan can skip them.
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
)

// NewUUID returns a random (version 4) UUID in its canonical text form.
func NewUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("exactfs: crypto/rand failed: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func stagingName(base, suffix string) string { return "." + base + "." + NewUUID() + suffix }

// treeEntryQuarantine is where an exact tree removal moves a file of the
// detached tree while it deletes it (the exact unlink's quarantine name).
// It lives inside <dir>.removing, which is residue already.
func treeEntryQuarantine() string { return ".gjc-delete-tree-entry-" + NewUUID() }

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
