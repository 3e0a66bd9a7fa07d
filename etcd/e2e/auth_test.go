//go:build unix

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestCLIUserPassword: on a cluster with authentication (RBAC) enabled,
// the CLI authenticates as USER@ in the URL (or $EXACTFS_ETCD_USER) with
// the password from the environment; a wrong password and a key outside
// the user's permission fail with 74 and say why, and no message ever
// shows the password. A key inside another lock's queue is refused (64).
func TestCLIUserPassword(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	root := enableRBAC(t, c)
	hosts := strings.Join(hostPorts(c.endpoints()), ",")
	pw := []string{"EXACTFS_ETCD_PASSWORD=s3cret-pw"}
	for i := 0; i < 2; i++ {
		runCLI(t, pw, "", "update", "etcd://alice@"+hosts+"/rbac/counter", "--", "sh", "-c", incr).want(t, 0)
	}
	runCLI(t, append(pw, "EXACTFS_ETCD_USER=alice"), "", "update", "etcd://"+hosts+"/rbac/counter", "--", "sh", "-c", incr).want(t, 0)
	r := runCLI(t, pw, "", "status", "etcd://alice@"+hosts+"/rbac/counter")
	r.want(t, 0)

	noLeak := func(r cliResult) {
		t.Helper()
		if strings.Contains(r.stderr+r.stdout, "s3cret") || strings.Contains(r.stderr+r.stdout, "wrong-pw") {
			t.Errorf("a message shows the password:\n%s%s", r.stdout, r.stderr)
		}
	}
	r = runCLI(t, []string{"EXACTFS_ETCD_PASSWORD=wrong-pw"}, "", "update", "--op-timeout", "3s", "etcd://alice@"+hosts+"/rbac/counter", "--", "sh", "-c", incr)
	r.want(t, 74, `etcd user "alice"`, "authentication failed")
	noLeak(r)
	r = runCLI(t, pw, "", "update", "--op-timeout", "3s", "etcd://alice@"+hosts+"/other/counter", "--", "sh", "-c", incr)
	r.want(t, 74, "permission denied")
	noLeak(r)
	r = runCLI(t, nil, "", "update", "etcd://alice:s3cret-pw@"+hosts+"/rbac/counter", "--", "cat")
	r.want(t, 64, "a password in the URL")
	noLeak(r)
	r = runCLI(t, pw, "", "update", "etcd://alice@"+hosts+"/rbac/counter.lock/x", "--", "cat")
	r.want(t, 64, `inside the lock queue of "/rbac/counter"`)

	if err := root.Close(); err != nil {
		t.Fatal(err)
	}
	admin, err := clientv3.New(clientv3.Config{Endpoints: c.endpoints(), Username: "root", Password: "root-pw"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	gr, err := admin.Get(ctx, "/rbac/counter")
	if err != nil || len(gr.Kvs) != 1 || strings.TrimSpace(string(gr.Kvs[0].Value)) != "3" {
		t.Fatalf("counter: %v %v; want 3", gr, err)
	}
}

// enableRBAC makes users root (root-pw) and alice (s3cret-pw, read-write
// on /rbac/), enables authentication, and returns the client that did it.
func enableRBAC(t *testing.T, c *cluster) *clientv3.Client {
	t.Helper()
	ctx := context.Background()
	root := c.client(t)
	for _, step := range []func() error{
		func() error { _, err := root.UserAdd(ctx, "root", "root-pw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := root.RoleAdd(ctx, "app"); return err },
		func() error {
			_, err := root.RoleGrantPermission(ctx, "app", "/rbac/", clientv3.GetPrefixRangeEnd("/rbac/"), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := root.UserAdd(ctx, "alice", "s3cret-pw"); return err },
		func() error { _, err := root.UserGrantRole(ctx, "alice", "app"); return err },
		func() error { _, err := root.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("setting up RBAC: %v", err)
		}
	}
	return root
}

// TestCLIUserPasswordSlowLink: authenticating, which clientv3 does as it
// connects, follows --op-timeout like every other request. Behind a proxy
// that delays every chunk 1.5 s each way it takes over 5 s: with the fixed
// 5 s bound it had, every command with a user failed at connect ("context
// deadline exceeded", exit 74) whatever --op-timeout said.
func TestCLIUserPasswordSlowLink(t *testing.T) {
	c := startCluster(t)
	enableRBAC(t, c)
	p := startProxy(t, strings.TrimPrefix(c.members[0].clientURL, "http://"), 1500*time.Millisecond)
	pw := []string{"EXACTFS_ETCD_PASSWORD=s3cret-pw"}
	r := runCLI(t, pw, "", "status", "--op-timeout", "40s", "etcd://alice@"+p.addr+"/rbac/slow")
	r.want(t, 0)
	t.Logf("status as an etcd user over a 3 s round trip: %s\n%s", r.took.Round(time.Millisecond), r.stdout)
	// A budget too short says which step ran out, and diagnoses the link.
	r = runCLI(t, pw, "", "status", "--op-timeout", "2s", "etcd://alice@"+p.addr+"/rbac/slow")
	r.want(t, 74, `authenticating as etcd user "alice" within 2s`, "no answer from etcd at")
}
