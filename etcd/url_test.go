package etcd

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/exactfs/exactfs/liveness"
)

func TestParseURL(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		url, envEps string
		eps         []string
		key         string
		tls         bool
	}{
		{url: "etcd://h1:2379,h2:2379/app/state.json", eps: []string{"http://h1:2379", "http://h2:2379"}, key: "/app/state.json"},
		{url: "etcd://h1/k", eps: []string{"http://h1:2379"}, key: "/k"},
		{url: "etcd://[::1]:2380/k", eps: []string{"http://[::1]:2380"}, key: "/k"},
		{url: "etcds://h1:2379/a%20b", eps: []string{"https://h1:2379"}, key: "/a b", tls: true},
		{url: "etcd:///app/x", envEps: "127.0.0.1:1, http://127.0.0.1:2", eps: []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, key: "/app/x"},
		{url: "ETCDS:///x", envEps: "https://h:1", eps: []string{"https://h:1"}, key: "/x", tls: true},
		{url: "etcd://alice@h1:2379/k", eps: []string{"http://h1:2379"}, key: "/k"},
	} {
		env[EnvEndpoints] = tc.envEps
		got, err := ParseURL(tc.url, getenv)
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if !reflect.DeepEqual(got.Endpoints, tc.eps) || got.Key != tc.key || got.TLS != tc.tls {
			t.Errorf("%s: %+v; want %v %q tls=%v", tc.url, got, tc.eps, tc.key, tc.tls)
		}
	}
}

func TestParseURLRejects(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct{ url, envEps, want string }{
		{"state.json", "", "not a URL"},
		{"http://h:1/k", "", `unknown scheme "http"`},
		{"etcd://h:1", "", "no key"},
		{"etcd://h:1/", "", "no key"},
		{"etcd://h:1/dir/", "", "ends in"},
		{"etcd:///k", "", "EXACTFS_ETCD_ENDPOINTS is not set"},
		{"etcd://h:99999/k", "", "port"},
		{"etcd://h:x/k", "", "port"},
		{"etcd://h1,,h2/k", "", "empty endpoint"},
		{"etcd://:2379/k", "", "no host"},
		{"etcd://h/k?x=1", "", "query"},
		{"etcd:///k", "https://h:1", "the URL says etcd://"},
		{"etcd://http://h:1/k", "", `endpoint "http:"`},
		{"etcd://h:1/u/counter.lock/oops", "", `lies inside the lock queue of "/u/counter"`},
		{"etcd://h:1/u/counter.lock/", "", `ends in`},
		{"etcd://alice:secret@h:1/k", "", "a password in the URL"},
	} {
		env[EnvEndpoints] = tc.envEps
		_, err := ParseURL(tc.url, getenv)
		var ue *URLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a URLError about %q", tc.url, err, tc.want)
		}
	}
	if _, err := ParseURL("etcd://alice:secret@h:1/k", getenv); err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a URL with a password: %v; want an error that does not repeat the password", err)
	}
	if IsURL("/tmp/a://b") || IsURL("state.json") || !IsURL("etcd://x/y") || !IsURL("s3://b/k") {
		t.Error("IsURL is not 'starts with scheme://'")
	}
}

func TestCredentials(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	tg, err := ParseURL("etcd://alice@h1/k", getenv)
	if err != nil || tg.User != "alice" {
		t.Fatalf("%+v %v; want user alice", tg, err)
	}
	if _, _, err := tg.Credentials(getenv); err == nil || !strings.Contains(err.Error(), EnvPassword) {
		t.Errorf("no password: %v; want an error naming %s", err, EnvPassword)
	}
	env[EnvPassword] = "pw"
	if u, p, err := tg.Credentials(getenv); u != "alice" || p != "pw" || err != nil {
		t.Errorf("Credentials: %q %q %v", u, p, err)
	}
	tg, _ = ParseURL("etcd://h1/k", getenv)
	if u, _, err := tg.Credentials(getenv); u != "" || err != nil {
		t.Errorf("no user: %q %v; want none", u, err)
	}
	env[EnvUser] = "bob"
	if u, p, err := tg.Credentials(getenv); u != "bob" || p != "pw" || err != nil {
		t.Errorf("user from the environment: %q %q %v", u, p, err)
	}
}

func TestLockRefusesAKeyInsideAQueue(t *testing.T) {
	l := NewClient(nil, WithHostIdentity(liveness.FixedHostIdentity("h"))).Locker("/u/counter.lock/oops")
	err := l.Update(context.Background(), func(b []byte) ([]byte, error) { return b, nil })
	if err == nil || !strings.Contains(err.Error(), "inside the lock queue") {
		t.Fatalf("Update of a key inside a queue: %v; want it refused", err)
	}
}
