package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Another uid in a shared sticky directory (mode 1777, as /tmp): whatever
// uid B plants at the names of uid A's lock, A is refused at once or waits
// out its timeout, nothing B planted is followed, read or removed, and A is
// told whose the object is and who can remove it (A cannot: the sticky bit
// lets only B or root unlink B's names).

const stickyA, stickyB = 4321, 4322

// stickyWorld is a 1777 directory under w and uid A's environment.
func stickyWorld(t *testing.T) (w *uidWorld, dir string, envA []string) {
	t.Helper()
	w = newUIDWorld(t)
	dir = filepath.Join(w.top, "tmp")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	return w, dir, []string{"HOME=" + w.home(t, stickyA)}
}

// plantedBy makes path uid B's (lchown: a symlink itself).
func plantedBy(t *testing.T, path string) {
	t.Helper()
	if err := os.Lchown(path, stickyB, stickyB); err != nil {
		t.Fatal(err)
	}
}

// TestAdversaryStickyPlantedObjectsNameTheirOwner: uid B plants a FIFO at
// F.lock, a FIFO at the sidecar F.lock.transition.owner, and a symlink at
// F.lock pointing to a file of A's. A's lock exits 77 at once, never
// blocks on the FIFO, leaves every planted object and the symlink's target
// as they were, and says that the object is uid B's and that only B or
// root can remove it. Fails before the hint: "remove what is there
// yourself if it is not yours", which A cannot do in a sticky directory.
func TestAdversaryStickyPlantedObjectsNameTheirOwner(t *testing.T) {
	for _, c := range []struct {
		name, at string
		plant    func(t *testing.T, dir, p string)
	}{
		{"fifo-record", "s.json.lock", func(t *testing.T, dir, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"fifo-sidecar", "s.json.lock.transition.owner", func(t *testing.T, dir, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink-record", "s.json.lock", func(t *testing.T, dir, p string) {
			target := filepath.Join(dir, "a-secret")
			if err := os.WriteFile(target, []byte("A's bytes"), 0o600); err != nil {
				t.Fatal(err)
			}
			os.Chown(target, stickyA, stickyA)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, dir, envA := stickyWorld(t)
			p := filepath.Join(dir, c.at)
			c.plant(t, dir, p)
			plantedBy(t, p)
			before, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"lock", "--timeout", "2s", "s.json", "--", "true"}, {"update", "--timeout", "2s", "s.json", "--", "echo", "x"}} {
				r := w.run(t, stickyA, stickyA, dir, envA, "", args...)
				expectCode(t, r, exitUnsafe, "uid A: "+strings.Join(args, " "))
				for _, want := range []string{c.at + " belongs to uid 4322", "only uid 4322 or root can remove it"} {
					if !strings.Contains(r.stderr, want) {
						t.Errorf("uid A: %s: stderr lacks %q:\n%s", args[0], want, r.stderr)
					}
				}
			}
			after, err := os.Lstat(p)
			if err != nil || !os.SameFile(before, after) || after.Mode() != before.Mode() {
				t.Errorf("the planted %s changed: %v %v", c.at, after, err)
			}
			if c.name == "symlink-record" && mustRead(t, filepath.Join(dir, "a-secret")) != "A's bytes" {
				t.Error("the symlink's target was written through")
			}
			if _, err := os.Lstat(filepath.Join(dir, "s.json")); err == nil {
				t.Error("the state file was written although the lock was refused")
			}
		})
	}
}

// TestAdversaryStickyClaimDirOfAnotherUID: uid B makes F.lock.transition, a
// 0700 directory, after A's first update (so A's sidecar is a tombstone,
// as after every completed cycle). A's lock waits out its timeout (75) and
// is told that the claim is uid B's directory and who can remove it;
// status says "permission denied" with the owner (exit 74, --exit-status
// 3, JSON claim.state permission_denied and claim.owner), not "not empty
// (0s old)" with exit 0; recover exits 74, not "nothing to recover" 0; the
// directory stays. Fails before the fix on each of those.
func TestAdversaryStickyClaimDirOfAnotherUID(t *testing.T) {
	w, dir, envA := stickyWorld(t)
	expectCode(t, w.run(t, stickyA, stickyA, dir, envA, "", "update", "s.json", "--", "echo", "1"), 0, "uid A: first update")
	claim := filepath.Join(dir, "s.json.lock.transition")
	if err := os.Mkdir(claim, 0o700); err != nil {
		t.Fatal(err)
	}
	plantedBy(t, claim)

	r := w.run(t, stickyA, stickyA, dir, envA, "", "lock", "--timeout", "1s", "s.json", "--", "true")
	expectCode(t, r, exitBusy, "uid A: lock")
	for _, want := range []string{"is a directory of uid 4322", "uid 4322 or root can remove it (rmdir s.json.lock.transition)"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("uid A: lock: stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	r = w.run(t, stickyA, stickyA, dir, envA, "", "status", "s.json")
	expectCode(t, r, exitIO, "uid A: status")
	if !strings.Contains(r.stdout, "transition claim: permission denied") || !strings.Contains(r.stdout, "owned by uid 4322") ||
		strings.Contains(r.stdout, "not empty") || strings.Contains(r.stdout, "0s old") {
		t.Errorf("uid A: status:\n%s", r)
	}
	r = w.run(t, stickyA, stickyA, dir, envA, "", "status", "--json", "s.json")
	var st statusJSON
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r)
	}
	if st.Claim.State != "permission_denied" || st.Claim.Owner == nil || st.Claim.Owner.Uid != stickyB || st.Claim.Owner.Mode != "0700" {
		t.Errorf("status --json: claim %+v owner %+v", st.Claim, st.Claim.Owner)
	}
	expectCode(t, w.run(t, stickyA, stickyA, dir, envA, "", "status", "--exit-status", "s.json"), statusBlocked, "uid A: status --exit-status")
	r = w.run(t, stickyA, stickyA, dir, envA, "", "recover", "s.json")
	expectCode(t, r, exitIO, "uid A: recover")
	if !strings.Contains(r.stdout, "leave transition claim (permission denied)") {
		t.Errorf("uid A: recover:\n%s", r)
	}
	if fi, err := os.Lstat(claim); err != nil || !fi.IsDir() {
		t.Errorf("uid B's claim directory is gone: %v", err)
	}
	if got := mustRead(t, filepath.Join(dir, "s.json")); got != "1\n" {
		t.Errorf("state file %q", got)
	}
}

// TestAdversaryStickyPlantedStateFileCMDNotRun: uid B planted the state
// file itself (0644) in the sticky directory. uid A's update can never
// replace it (exactfs.WriteFile refuses to hand the successor to B or to
// take the file from B), so it must refuse before CMD runs: exit 74, CMD's
// side effect absent, the message naming B and saying CMD was not run,
// B's file byte-identical. Fails before the check: CMD ran (its marker
// file appeared) and only the write was refused.
func TestAdversaryStickyPlantedStateFileCMDNotRun(t *testing.T) {
	w, dir, envA := stickyWorld(t)
	state := filepath.Join(dir, "s.json")
	if err := os.WriteFile(state, []byte("B's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plantedBy(t, state)
	home := envA[0][len("HOME="):]
	marker := filepath.Join(home, "cmd-ran")
	r := w.run(t, stickyA, stickyA, dir, envA, "", "update", "s.json", "--", "sh", "-c", "touch "+marker+"; cat; echo A")
	expectCode(t, r, exitIO, "uid A: update over B's state file")
	for _, want := range []string{"belongs to uid 4322", "CMD was not run"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if _, err := os.Lstat(marker); err == nil {
		t.Error("CMD ran over a state file the update could never replace")
	}
	if got := mustRead(t, state); got != "B's\n" || ownerUID(t, state) != stickyB {
		t.Errorf("B's state file changed: %q", got)
	}
}

// TestAdversaryStickyPlantedRecordNotSharedLockAdvice: uid B planted a
// valid-looking tombstone of its own at F.lock (0600) in the sticky
// directory. A's lock is refused (lock_object_untrusted: A may neither
// trust nor replace B's file there) and told that B planted it and only B
// or root can remove it, not that "every process sharing a lock must run
// as the same user", which is advice for a directory a group shares on
// purpose. The planted record is left byte-identical. Fails before the
// sticky case was told apart: the shared-lock advice.
func TestAdversaryStickyPlantedRecordNotSharedLockAdvice(t *testing.T) {
	w, dir, envA := stickyWorld(t)
	rec := filepath.Join(dir, "s.json.lock")
	const tomb = `{"pid":1,"start_time":"unknown","token":"planted","owner_host_id":"h","released":true}`
	if err := os.WriteFile(rec, []byte(tomb), 0o600); err != nil {
		t.Fatal(err)
	}
	plantedBy(t, rec)
	r := w.run(t, stickyA, stickyA, dir, envA, "", "lock", "--timeout", "2s", "s.json", "--", "true")
	if r.code != exitUnsafe && r.code != exitIO {
		t.Fatalf("uid A: lock: want 77 or 74, got %s", r)
	}
	if !strings.Contains(r.stderr, "only uid 4322 or root can remove it") || strings.Contains(r.stderr, "must run as the same user") {
		t.Errorf("uid A: lock: %s", r.stderr)
	}
	if got := mustRead(t, rec); got != tomb || ownerUID(t, rec) != stickyB {
		t.Errorf("the planted record changed: %q", got)
	}
}
