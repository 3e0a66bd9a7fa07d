//go:build unix

package e2e

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCLICommandEnvironment: CMD learns the lock it runs under in update
// as in lock: EXACTFS_LOCK_TOKEN (the file backend's name; here the fencing
// token, the lock key's create revision, growing with each acquisition),
// EXACTFS_LOCK_KEY (our lock key) and EXACTFS_LOCK_URL. A script that reads
// EXACTFS_LOCK_TOKEN works against a file and an etcd URL alike, through
// the core exactfs command. Before, update's CMD got EXACTFS_LOCK_URL only.
func TestCLICommandEnvironment(t *testing.T) {
	c := startCluster(t)
	raw := c.client(t)
	key := "/env/state"
	url := "etcd://" + strings.Join(hostPorts(c.endpoints()), ",") + key
	const show = `cat >/dev/null; printf '%s %s %s' "$EXACTFS_LOCK_TOKEN" "$EXACTFS_LOCK_KEY" "$EXACTFS_LOCK_URL"`
	parse := func(what, s string) (int64, string) {
		t.Helper()
		f := strings.Fields(s)
		if len(f) != 3 {
			t.Fatalf("%s: CMD saw %q; want a token, a key and a URL", what, s)
		}
		tok, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || tok <= 0 {
			t.Fatalf("%s: EXACTFS_LOCK_TOKEN=%q, want a revision", what, f[0])
		}
		if !strings.HasPrefix(f[1], key+".lock/") {
			t.Errorf("%s: EXACTFS_LOCK_KEY=%q, want a key under %s.lock/", what, f[1], key)
		}
		if f[2] != url {
			t.Errorf("%s: EXACTFS_LOCK_URL=%q, want %q", what, f[2], url)
		}
		return tok, f[1]
	}
	var last int64
	for i, bin := range []string{cliBinary(t), coreBinary(t)} {
		runBinary(t, bin, nil, "", "update", url, "--", "sh", "-c", show).want(t, 0)
		gr, err := raw.Get(t.Context(), key)
		if err != nil || len(gr.Kvs) != 1 {
			t.Fatalf("reading %s: %v", key, err)
		}
		tok, _ := parse("update", string(gr.Kvs[0].Value))
		// The token is our lock key's create revision: after every earlier
		// write, before our own commit.
		if tok <= last || tok >= gr.Kvs[0].ModRevision {
			t.Errorf("update %d: token %d, want between the previous token %d and the commit's revision %d", i, tok, last, gr.Kvs[0].ModRevision)
		}
		last = tok
		r := runBinary(t, bin, nil, "", "lock", url, "--", "sh", "-c", show)
		r.want(t, 0)
		tok, _ = parse("lock", r.stdout)
		if tok <= last {
			t.Errorf("lock %d: token %d, not above the previous one, %d", i, tok, last)
		}
		last = tok
	}
	// The same script under the file backend sees the same variable.
	r := runBinary(t, coreBinary(t), nil, "", "lock", filepath.Join(t.TempDir(), "state"), "--", "sh", "-c", `printf %s "$EXACTFS_LOCK_TOKEN"`)
	r.want(t, 0)
	if r.stdout == "" {
		t.Errorf("exactfs lock FILE: CMD saw no EXACTFS_LOCK_TOKEN")
	}
}
