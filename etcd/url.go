package etcd

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Environment variables read by ParseURL and TLSConfig.
const (
	EnvEndpoints = "EXACTFS_ETCD_ENDPOINTS" // endpoints for etcd:///KEY
	EnvCACert    = "EXACTFS_ETCD_CACERT"    // etcds: PEM file of the CA to trust (default: the system's)
	EnvCert      = "EXACTFS_ETCD_CERT"      // etcds: client certificate (PEM), with EnvKey
	EnvKey       = "EXACTFS_ETCD_KEY"       // etcds: client key (PEM)
	// etcd authentication (RBAC): the user (or user@ in the URL) and its
	// password, never in the URL, where ps and messages would show it.
	EnvUser         = "EXACTFS_ETCD_USER"
	EnvPassword     = "EXACTFS_ETCD_PASSWORD"
	EnvPasswordFile = "EXACTFS_ETCD_PASSWORD_FILE" // a file holding the password (one line)
)

// DefaultPort is the etcd client port used when an endpoint names none.
const DefaultPort = "2379"

var schemeRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// IsURL says whether arg is a backend URL rather than a path: it starts
// with "scheme://". Only such arguments are parsed as URLs.
func IsURL(arg string) bool { return schemeRE.MatchString(arg) }

// Target is a parsed etcd:// or etcds:// URL.
type Target struct {
	URL       string   // as given
	TLS       bool     // etcds
	Endpoints []string // http:// or https:// URLs, one per member
	Key       string   // the state key (the URL's path, leading "/" kept)
	User      string   // etcd user from USER@ in the URL, "" for none
}

// Credentials returns the etcd user and password to authenticate with:
// the user from the URL (USER@HOST) or $EXACTFS_ETCD_USER, the password
// from $EXACTFS_ETCD_PASSWORD or the file named by
// $EXACTFS_ETCD_PASSWORD_FILE. No user means no authentication.
func (t *Target) Credentials(getenv func(string) string) (user, password string, err error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	user = t.User
	if user == "" {
		user = getenv(EnvUser)
	}
	if user == "" {
		return "", "", nil
	}
	password = getenv(EnvPassword)
	if f := getenv(EnvPasswordFile); password == "" && f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", "", fmt.Errorf("reading the etcd password from $%s: %w", EnvPasswordFile, err)
		}
		password = strings.TrimRight(string(b), "\r\n")
	}
	if password == "" {
		return "", "", fmt.Errorf("the etcd user %q needs a password: set $%s, or $%s to a file holding it", user, EnvPassword, EnvPasswordFile)
	}
	return user, password, nil
}

// URLError is a malformed or unusable backend URL.
type URLError struct {
	URL string
	Msg string
}

func (e *URLError) Error() string { return fmt.Sprintf("%q: %s", e.URL, e.Msg) }

// CheckKey refuses a state key that lies inside another key's lock queue
// (a path segment ending in ".lock"): keys under K.lock/ are K's queue, so
// such a state key would be taken for a contender and block K's lock until
// someone ran recover.
func CheckKey(key string) error {
	if i := strings.Index(key, LockSuffix); i >= 0 {
		return fmt.Errorf("the key %q lies inside the lock queue of %q (keys under KEY%s belong to KEY's lock, and one there would block it); choose a key without %q in it", key, key[:i], LockSuffix, LockSuffix)
	}
	return nil
}

// ParseURL parses etcd://HOST[:PORT][,HOST[:PORT]...]/KEY, or etcd:///KEY
// with the endpoints in $EXACTFS_ETCD_ENDPOINTS (host:port list; entries
// may carry http:// or https://). etcds:// is the same over TLS. getenv is
// os.Getenv when nil.
func ParseURL(raw string, getenv func(string) string) (*Target, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	bad := func(format string, args ...any) error { return &URLError{URL: raw, Msg: fmt.Sprintf(format, args...)} }
	if !IsURL(raw) {
		return nil, bad("not a URL: want etcd://HOST:PORT/KEY")
	}
	i := strings.Index(raw, "://")
	scheme, rest := strings.ToLower(raw[:i]), raw[i+3:]
	t := &Target{URL: raw}
	switch scheme {
	case "etcd":
	case "etcds":
		t.TLS = true
	default:
		return nil, bad("unknown scheme %q: want etcd:// or etcds://", scheme)
	}
	if j := strings.IndexAny(rest, "?#"); j >= 0 {
		return nil, bad("a query or fragment (%q) is not part of an etcd URL; the key is the whole path", rest[j:])
	}
	slash := strings.IndexByte(rest, '/')
	if slash < 0 {
		return nil, bad("no key: want %s://HOST:PORT/KEY", scheme)
	}
	hosts, path := rest[:slash], rest[slash:]
	if at := strings.LastIndexByte(hosts, '@'); at >= 0 {
		info := hosts[:at]
		if c := strings.IndexByte(info, ':'); c >= 0 {
			// Never repeat the password, not even in this message.
			return nil, &URLError{URL: raw[:i+3] + info[:c] + ":***@" + rest[at+1:], Msg: fmt.Sprintf("a password in the URL would show in ps and in messages: write %s://USER@HOST/KEY and give the password in $%s (or a file named by $%s)", scheme, EnvPassword, EnvPasswordFile)}
		}
		u, err := url.PathUnescape(info)
		if err != nil || u == "" {
			return nil, bad("the user %q before \"@\" is not valid", info)
		}
		t.User = u
		hosts = hosts[at+1:]
	}
	key, err := url.PathUnescape(path)
	if err != nil {
		return nil, bad("the key %q is not a valid URL path: %v", path, err)
	}
	if key == "/" || key == "" {
		return nil, bad("no key after the endpoints: want %s://HOST:PORT/KEY", scheme)
	}
	if strings.HasSuffix(key, "/") {
		return nil, bad("the key %q ends in \"/\": name a key, not a directory", key)
	}
	if err := CheckKey(key); err != nil {
		return nil, bad("%v", err)
	}
	t.Key = key
	want := "http"
	if t.TLS {
		want = "https"
	}
	from := "the URL"
	if hosts == "" {
		hosts = strings.TrimSpace(getenv(EnvEndpoints))
		from = "$" + EnvEndpoints
		if hosts == "" {
			return nil, bad("%s:///KEY names no endpoints and $%s is not set: set %s=h1:2379,h2:2379 or write %s://h1:2379/KEY", scheme, EnvEndpoints, EnvEndpoints, scheme)
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, bad("an empty endpoint in %s (%q)", from, hosts)
		}
		if k := strings.Index(h, "://"); k >= 0 {
			if from == "the URL" {
				return nil, bad("endpoint %q in the URL carries a scheme; write HOST:PORT", h)
			}
			if s := strings.ToLower(h[:k]); s != want {
				return nil, bad("endpoint %q in %s is %s, but the URL says %s:// (%s)", h, from, s, scheme, want)
			}
			h = strings.TrimSuffix(h[k+3:], "/")
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			if strings.Contains(err.Error(), "missing port") {
				host, port = strings.Trim(h, "[]"), DefaultPort
			} else {
				return nil, bad("endpoint %q in %s: %v", h, from, err)
			}
		}
		if host == "" {
			return nil, bad("endpoint %q in %s has no host", h, from)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, bad("endpoint %q in %s: port %q is not a number from 1 to 65535", h, from, port)
		}
		t.Endpoints = append(t.Endpoints, want+"://"+net.JoinHostPort(host, port))
	}
	return t, nil
}

// TLSConfig is the client TLS configuration for an etcds:// target: the
// system's roots or $EXACTFS_ETCD_CACERT, and a client certificate from
// $EXACTFS_ETCD_CERT and $EXACTFS_ETCD_KEY when both are set. It is nil for
// etcd://.
func (t *Target) TLSConfig(getenv func(string) string) (*tls.Config, error) {
	if !t.TLS {
		return nil, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := getenv(EnvCACert); ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("$%s: %w", EnvCACert, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("$%s=%s holds no PEM certificate", EnvCACert, ca)
		}
		cfg.RootCAs = pool
	}
	cert, key := getenv(EnvCert), getenv(EnvKey)
	switch {
	case cert != "" && key != "":
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("client certificate $%s, $%s: %w", EnvCert, EnvKey, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	case cert != "" || key != "":
		return nil, errors.New("set both " + EnvCert + " and " + EnvKey + " for a client certificate, or neither")
	}
	return cfg, nil
}

// Diagnose dials each endpoint (TCP, then the TLS handshake for https)
// and says, one line per endpoint, what stood in the way: for people, when
// the cluster did not answer. An endpoint that accepts the connection is
// reported as reachable.
func Diagnose(endpoints []string, cfg *tls.Config, timeout time.Duration) []string {
	var out []string
	for _, ep := range endpoints {
		u, err := url.Parse(ep)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", ep, err))
			continue
		}
		d := net.Dialer{Timeout: timeout}
		conn, err := d.Dial("tcp", u.Host)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", ep, err))
			continue
		}
		if u.Scheme == "https" {
			c := cfg.Clone()
			if c == nil {
				c = &tls.Config{}
			}
			if c.ServerName == "" {
				c.ServerName = u.Hostname()
			}
			tc := tls.Client(conn, c)
			_ = tc.SetDeadline(time.Now().Add(timeout))
			err = tc.Handshake()
			conn = tc
		}
		conn.Close()
		if err != nil {
			out = append(out, fmt.Sprintf("%s: TLS: %v", ep, err))
		} else {
			out = append(out, fmt.Sprintf("%s: reachable (it did not answer in time: no leader, or overloaded?)", ep))
		}
	}
	return out
}
