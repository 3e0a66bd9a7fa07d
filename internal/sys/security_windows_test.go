package sys

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/windows"
)

// TestOwnerOnlyEvaluation: what OwnerOnly accepts and refuses, on
// security descriptors built in memory (SDDL), so it runs under Wine too:
// only an owner that is the current user and a present DACL whose every
// entry allows that user alone; protected when asked.
func TestOwnerOnlyEvaluation(t *testing.T) {
	me, err := currentUser()
	if err != nil {
		t.Fatal(err)
	}
	u := me.String()
	for _, tc := range []struct {
		name      string
		sddl      string
		protected bool
		want      error // nil: accepted
		detail    string
	}{
		{"protected, owner only", "O:%[1]sD:P(A;OICI;FA;;;%[1]s)", true, nil, ""},
		{"protected, inherited by the entry", "O:%[1]sD:P(A;OICI;FA;;;%[1]s)", false, nil, ""},
		{"inherited entries for the owner, not asked protected", "O:%[1]sD:AI(A;ID;FA;;;%[1]s)", false, nil, ""},
		{"empty protected DACL", "O:%[1]sD:P", true, nil, ""},
		{"not protected", "O:%[1]sD:(A;;FA;;;%[1]s)", true, ErrACLPresent, "not protected"},
		{"owned by Administrators", "O:BAD:P(A;;FA;;;%[1]s)", true, ErrNotOwner, "S-1-5-32-544"},
		{"owned by SYSTEM", "O:SYD:P(A;;FA;;;%[1]s)", false, ErrNotOwner, "S-1-5-18"},
		{"Everyone may read", "O:%[1]sD:P(A;;FA;;;%[1]s)(A;;FR;;;WD)", true, ErrACLPresent, "S-1-1-0"},
		{"SYSTEM too", "O:%[1]sD:P(A;;FA;;;%[1]s)(A;;FA;;;SY)", false, ErrACLPresent, "S-1-5-18"},
		{"inherit-only entry for users", "O:%[1]sD:P(A;;FA;;;%[1]s)(A;OICIIO;FA;;;BU)", true, ErrACLPresent, "S-1-5-32-545"},
		{"a deny entry", "O:%[1]sD:P(D;;FA;;;WD)(A;;FA;;;%[1]s)", true, ErrACLUnknown, "type 1"},
		{"no DACL", "O:%[1]s", false, ErrACLPresent, "everyone"},
		{"no owner", "D:P(A;;FA;;;%[1]s)", false, ErrNotOwner, "no owner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sddl := fmt.Sprintf(tc.sddl, u)
			sd, err := windows.SecurityDescriptorFromString(sddl)
			if err != nil {
				t.Fatalf("SDDL %s: %v", sddl, err)
			}
			err = checkOwnerOnly(sd, me, tc.protected)
			switch {
			case tc.want == nil && err != nil:
				t.Fatalf("%s: %v, want accepted", sddl, err)
			case tc.want == nil:
			case !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.detail):
				t.Fatalf("%s: %v, want %v saying %q", sddl, err, tc.want, tc.detail)
			default:
				var ae *ACLError
				if !errors.As(err, &ae) {
					t.Fatalf("%s: %T, want *ACLError", sddl, err)
				}
				t.Logf("%v", err)
			}
		})
	}
}

// TestOwnerOnlyNullDACL: a DACL that is present but NULL lets everyone in.
// (Built by hand: Wine's SDDL parser makes an empty DACL of
// "D:NO_ACCESS_CONTROL", where Windows makes a NULL one.)
func TestOwnerOnlyNullDACL(t *testing.T) {
	me, err := currentUser()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.NewSecurityDescriptor()
	if err != nil {
		t.Fatal(err)
	}
	if err := sd.SetOwner(me, false); err != nil {
		t.Fatal(err)
	}
	if err := sd.SetDACL(nil, true, false); err != nil {
		t.Fatal(err)
	}
	if err := checkOwnerOnly(sd, me, false); !errors.Is(err, ErrACLPresent) || !strings.Contains(err.Error(), "NULL") {
		t.Fatalf("checkOwnerOnly(NULL DACL) = %v, want ErrACLPresent saying NULL", err)
	}
}

// TestOwnerOnlyOnDisk: a directory as a temporary directory is made (its
// entries inherited from above) is not owner-only; MakeOwnerOnly makes it
// so, and a file created in it is owner-only through the entry it
// inherits, but not protected until MakeOwnerOnly makes it so too. Wine
// keeps no DACL and synthesizes one that lets others in, so there both
// OwnerOnly and MakeOwnerOnly must refuse, which is what a caller then
// does: fail closed.
func TestOwnerOnlyOnDisk(t *testing.T) {
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	err := OwnerOnly(fd, true)
	var ae *ACLError
	if !errors.As(err, &ae) || !errors.Is(err, ErrACLPresent) && !errors.Is(err, ErrNotOwner) {
		t.Fatalf("OwnerOnly(a fresh temporary directory) = %v, want ErrACLPresent or ErrNotOwner", err)
	}
	t.Logf("fresh directory: %v", err)
	err = MakeOwnerOnly(fd, true)
	if underWine() {
		if !errors.Is(err, ErrACLPresent) {
			t.Fatalf("MakeOwnerOnly under Wine = %v, want ErrACLPresent (Wine keeps no DACL, so the read-back must refuse)", err)
		}
		t.Logf("under Wine, MakeOwnerOnly refuses: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("MakeOwnerOnly(%s): %v", dir, err)
	}
	if err := OwnerOnly(fd, true); err != nil {
		t.Fatalf("OwnerOnly after MakeOwnerOnly: %v", err)
	}
	create(t, fd, "secret", "s")
	ff, err := Open(fd, "secret", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(ff)
	if err := OwnerOnly(ff, false); err != nil {
		t.Fatalf("OwnerOnly(a file in an owner-only directory): %v", err)
	}
	if err := OwnerOnly(ff, true); !errors.Is(err, ErrACLPresent) {
		t.Fatalf("OwnerOnly(an inheriting file, protected) = %v, want ErrACLPresent", err)
	}
	if err := MakeOwnerOnly(ff, false); err != nil {
		t.Fatalf("MakeOwnerOnly(file): %v", err)
	}
	if err := OwnerOnly(ff, true); err != nil {
		t.Fatalf("OwnerOnly(file) after MakeOwnerOnly: %v", err)
	}
}

// TestOwnedByDefaultOwner: an object owned by the token's default owner
// (the user; Administrators when elevated) is recognized, one owned by
// SYSTEM is not; and (real Windows) a file this process creates is owned
// by it, which is what lets a caller tighten its own file. Wine
// synthesizes the owner of every file (the user) whatever the token's
// default owner is, so the on-disk half needs real Windows.
func TestOwnedByDefaultOwner(t *testing.T) {
	def, err := defaultOwner()
	if err != nil {
		t.Fatal(err)
	}
	for sddl, want := range map[string]bool{"O:" + def.String(): true, "O:SY": def.String() == "S-1-5-18", "D:P": false} {
		sd, err := windows.SecurityDescriptorFromString(sddl)
		if err != nil {
			t.Fatal(err)
		}
		if got := ownedBy(sd, def); got != want {
			t.Errorf("ownedBy(%s, %s) = %v, want %v", sddl, def, got, want)
		}
	}
	skipUnderWine(t, "owners of its own: it synthesizes every file's")
	dir := t.TempDir()
	fd := dirHandle(t, dir)
	create(t, fd, "mine", "x")
	ff, err := Open(fd, "mine", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer Close(ff)
	if ok, err := OwnedByDefaultOwner(ff); err != nil || !ok {
		t.Fatalf("OwnedByDefaultOwner(a file this process created) = %v, %v (default owner %s)", ok, err, sidName(def))
	}
}

// TestWineOwnerOnlySubstitute: WineOwnerOnlyForTest, which lets the tests
// of the store run under Wine, makes OwnerOnly and MakeOwnerOnly prove the
// owner alone while it is on, and only under Wine; restore puts the DACL
// check back (the refusal TestOwnerOnlyOnDisk checks). On real Windows it
// is off and changes nothing. The owner half still refuses another
// owner's descriptor (checked in memory: under Wine every object is the
// user's).
func TestWineOwnerOnlySubstitute(t *testing.T) {
	fd := dirHandle(t, t.TempDir())
	restore, active := WineOwnerOnlyForTest()
	if active != underWine() {
		t.Fatalf("the substitute is active=%v, under Wine=%v: it must be on under Wine only", active, underWine())
	}
	if !active {
		restore()
		if err := OwnerOnly(fd, true); err == nil {
			t.Fatal("OwnerOnly accepted a fresh temporary directory on real Windows")
		}
		return
	}
	if err := OwnerOnly(fd, true); err != nil {
		t.Errorf("OwnerOnly with the substitute on: %v", err)
	}
	if err := MakeOwnerOnly(fd, true); err != nil {
		t.Errorf("MakeOwnerOnly with the substitute on: %v", err)
	}
	restore()
	if err := OwnerOnly(fd, true); !errors.Is(err, ErrACLPresent) {
		t.Errorf("OwnerOnly after restore = %v, want ErrACLPresent (Wine's synthesized DACL)", err)
	}
	other, err := windows.StringToSid("S-1-5-18") // SYSTEM
	if err != nil {
		t.Fatal(err)
	}
	me, err := currentUser()
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.NewSecurityDescriptor()
	if err != nil {
		t.Fatal(err)
	}
	if err := sd.SetOwner(other, false); err != nil {
		t.Fatal(err)
	}
	if err := checkOwner(sd, me); !errors.Is(err, ErrNotOwner) {
		t.Errorf("checkOwner(owned by SYSTEM) = %v, want ErrNotOwner", err)
	}
}
