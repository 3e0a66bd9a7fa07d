//go:build unix

package e2e

import (
	"context"
	"strings"
	"testing"

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
