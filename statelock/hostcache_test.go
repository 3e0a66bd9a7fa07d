package statelock

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/liveness"
)

// hostIdentity remembers the identity under the default config root with
// the environment the root came from (issue 25: no path is built per
// call). The memo must follow the environment: a process that changes
// $XDG_CONFIG_HOME between calls gets the identity of the root it names
// now, as when the root was derived on every call.
func TestDefaultHostIdentityFollowsEnvironment(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	want := func(xdg string) liveness.HostIdentity {
		t.Helper()
		h, err := liveness.LoadHostIdentity(filepath.Join(xdg, "exactfs"))
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	ha, hb := want(a), want(b)
	if ha.ID == hb.ID {
		t.Fatal("two config roots gave one host id: the test cannot tell them apart")
	}
	for _, step := range []struct {
		xdg  string
		want liveness.HostIdentity
	}{{a, ha}, {a, ha}, {b, hb}, {a, ha}} {
		t.Setenv("XDG_CONFIG_HOME", step.xdg)
		c := newConfig(nil)
		got, err := hostIdentity(&c)
		if err != nil {
			t.Fatal(err)
		}
		if got.ID != step.want.ID {
			t.Fatalf("XDG_CONFIG_HOME=%s: host id %s, want %s (that root's)", step.xdg, got.ID, step.want.ID)
		}
	}
}

// openLocker cuts F.lock and F.lock.transition out of
// F.lock.transition.owner: the suffixes must stay prefixes of one another.
func TestLockNamesArePrefixes(t *testing.T) {
	if !strings.HasPrefix(sidecarSuffix, claimSuffix) || !strings.HasPrefix(claimSuffix, lockSuffix) {
		t.Fatalf("%q, %q, %q: each must begin with the one before", lockSuffix, claimSuffix, sidecarSuffix)
	}
	e := newEnv(t)
	l, err := newLocker(e.state, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	if l.lockName != "state.json.lock" || l.claim != "state.json.lock.transition" || l.sidecar != "state.json.lock.transition.owner" || l.lockPath != e.lock {
		t.Fatalf("names %q %q %q %q", l.lockName, l.claim, l.sidecar, l.lockPath)
	}
}
