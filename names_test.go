package exactfs

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestClassifyName pins every private name the module writes (and the
// names peers write) to one kind, and the order in which ambiguous names
// are read: the reaper, the store's List, status and rm all decide on this
// classification.
func TestClassifyName(t *testing.T) {
	const u = "0123abcd-4567-4def-89ab-0123456789ab"
	cases := []struct {
		name   string
		kind   NameKind
		target string
		pid    int
	}{
		{"state.json", NamePublic, "", 0},
		{"F.lock", NamePublic, "", 0},
		{".hidden", NamePublic, "", 0},
		{".F." + u + ".staging", NameStaging, "F", 0},
		{".F.lock." + u + ".replacement", NameStaging, "F.lock", 0},
		{".gjc-x." + u + ".staging", NameStaging, "gjc-x", 0}, // staging wins
		{".F." + strings.ToUpper(u) + ".staging", NamePublic, "", 0},
		{StoreRetireName(), NameStoreRetire, "", 0},
		{LeaseRetireName(), NameLeaseRetire, "", 0},
		{placeholderName(1, 2), NamePlaceholder, "", 0},
		{LockQuarantineName(), NameLockQuarantine, "", 0},
		{LockQuarantinePrefix + "x", NameQuarantine, "", 0}, // no .json: another quarantine
		{SpareName("F.lock.transition"), NameSpare, "F.lock.transition", 0},
		{moveAsideName(), NameMoveDir, "", 0},
		{treeEntryQuarantine(), NameQuarantine, "", 0},
		{RmQuarantineName(), NameQuarantine, "", 0},
		{".gjc-delete-anything", NameQuarantine, "", 0},
		{FenceLeaseName("jobs") + LeaseSuffix, NameFenceLease, "jobs", 0},
		{".gjc-.lock", NamePrivate, "", 0},
		{".gjc-future", NamePrivate, "", 0},
		{DirLockName, NameDirLock, "", 0},
		{DirLockName + LeaseSuffix, NameFenceLease, "dir-lock", 0}, // a fence named dir-lock
		{"F.tmp-42-" + u, NameTemp, "F", 42},
		{"a.b.tmp-4294967295-" + u, NameTemp, "a.b", 4294967295},
		{"F.tmp-042-" + u, NamePublic, "", 0},
		{"F.tmp-12345678901-" + u, NamePublic, "", 0},
		{".tmp-1-" + u, NamePublic, "", 0},
		{"F.tmp--" + u, NamePublic, "", 0},
		{"F.removing", NameRemoving, "F", 0},
		{".removing", NamePublic, "", 0},
		{".gjc-delete-x.removing", NameQuarantine, "", 0}, // the prefix wins
	}
	for _, c := range cases {
		got := ClassifyName(c.name)
		if got.Kind != c.kind || got.Target != c.target || got.Pid != c.pid {
			t.Errorf("ClassifyName(%q) = %+v (%v), want kind %v target %q pid %d", c.name, got, got.Kind, c.kind, c.target, c.pid)
		}
	}
	if SpareName(strings.Repeat("x", 250)) != "" {
		t.Error("SpareName returned a name longer than 255 bytes")
	}
}

// tsTemp is the reference's temp file pattern after the state file's name,
// as statelock spells it today.
var tsTemp = regexp.MustCompile(`^\.tmp-([1-9][0-9]{0,9})-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// FuzzClassifyTemp checks the temp-file reading against the pattern
// statelock matches with today: for the state file ClassifyName names, the
// regular expression must agree, pid included.
func FuzzClassifyTemp(f *testing.F) {
	f.Add("F.tmp-42-0123abcd-4567-4def-89ab-0123456789ab")
	f.Add("x.tmp-0-0123abcd-4567-4def-89ab-0123456789ab")
	f.Add("a.tmp-1-b.tmp-2-0123abcd-4567-4def-89ab-0123456789ab")
	f.Fuzz(func(t *testing.T, name string) {
		p := ClassifyName(name)
		if p.Kind != NameTemp {
			// No split into <base><suffix> may match unless a
			// higher-ranked kind took the name.
			if p.Kind != NamePublic {
				return
			}
			for i := 1; i < len(name); i++ {
				if tsTemp.MatchString(name[i:]) {
					t.Fatalf("%q: base %q matches the pattern but ClassifyName says %v", name, name[:i], p.Kind)
				}
			}
			return
		}
		m := tsTemp.FindStringSubmatch(strings.TrimPrefix(name, p.Target))
		if !strings.HasPrefix(name, p.Target) || m == nil {
			t.Fatalf("%q: ClassifyName says temp of %q, the pattern disagrees", name, p.Target)
		}
		if pid, _ := strconv.Atoi(m[1]); pid != p.Pid {
			t.Fatalf("%q: pid %d, pattern says %d", name, p.Pid, pid)
		}
	})
}
