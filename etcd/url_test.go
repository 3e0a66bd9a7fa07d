package etcd

import (
	"errors"
	"reflect"
	"strings"
	"testing"
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
	} {
		env[EnvEndpoints] = tc.envEps
		_, err := ParseURL(tc.url, getenv)
		var ue *URLError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want a URLError about %q", tc.url, err, tc.want)
		}
	}
	if IsURL("/tmp/a://b") || IsURL("state.json") || !IsURL("etcd://x/y") || !IsURL("s3://b/k") {
		t.Error("IsURL is not 'starts with scheme://'")
	}
}
