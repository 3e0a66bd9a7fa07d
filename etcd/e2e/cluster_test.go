//go:build unix

// Package e2e tests the exactfs etcd lock against a real three-member etcd
// cluster on 127.0.0.1 whose members are child processes (this test binary,
// re-executed), so that a member can be SIGKILLed and restarted, and
// against worker processes that can be SIGSTOPped.
package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Roles of a re-executed test binary.
const (
	roleEnv   = "EXACTFS_E2E_ROLE"
	argsEnv   = "EXACTFS_E2E_ARGS"
	roleMemb  = "member"
	roleWork  = "worker"
	rolePause = "pause-holder"
	roleSucc  = "successor"
	roleHold  = "holdcmd"
)

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "":
		code := m.Run()
		if cliDir != "" {
			os.RemoveAll(cliDir)
		}
		os.Exit(code)
	case roleMemb:
		runMember()
	case roleWork:
		runWorker()
	case rolePause:
		runPauseHolder()
	case roleSucc:
		runSuccessor()
	case roleHold:
		runHoldCmd()
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", roleEnv, os.Getenv(roleEnv))
		os.Exit(2)
	}
	os.Exit(0)
}

// roleArgs are the arguments a parent passed to a child role, one per line.
func roleArgs() []string { return strings.Split(os.Getenv(argsEnv), "\n") }

// member is one etcd member of a test cluster.
type member struct {
	name       string
	dir        string
	clientURL  string
	peerURL    string
	cmd        *exec.Cmd
	exited     chan struct{}
	logPath    string
	initialCfg string // initial-cluster
	certFile   string // the client TLS certificate and key, "" for none
	keyFile    string
	timing     string // "TICK_MS,ELECTION_MS", "" for etcd's defaults
}

// memberTiming, when set before startCluster, is the heartbeat and election
// timeout of the members ("TICK_MS,ELECTION_MS").
var memberTiming string

// cluster is a three-member etcd cluster on 127.0.0.1.
type cluster struct {
	t       testing.TB
	members []*member
	tls     *tls.Config // for clients of a cluster that serves clients over TLS
}

// handedPorts are the ports freePort gave out in this process: a port
// is closed again as soon as it is found, and the kernel may offer it
// once more, so two members of one cluster could be given the same one
// (seen in CI: "initial cluster ... has duplicate url").
var handedPorts struct {
	sync.Mutex
	m map[int]bool
}

// freePort returns a loopback port that was free a moment ago and that
// this process has not handed out before.
func freePort(t testing.TB) int {
	t.Helper()
	handedPorts.Lock()
	defer handedPorts.Unlock()
	if handedPorts.m == nil {
		handedPorts.m = map[int]bool{}
	}
	for i := 0; i < 1000; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedPorts.m[port] {
			handedPorts.m[port] = true
			return port
		}
	}
	t.Fatal("no loopback port this process has not used already in 1000 tries")
	return 0
}

// startCluster starts three members and waits until they have a leader.
func startCluster(t testing.TB) *cluster {
	t.Helper()
	return startClusterTLS(t, nil)
}

// startClusterTLS is startCluster; with tc, members serve clients over
// TLS with tc's certificate.
func startClusterTLS(t testing.TB, tc *testCerts) *cluster {
	t.Helper()
	base := t.TempDir()
	c := &cluster{t: t}
	scheme := "http"
	if tc != nil {
		scheme, c.tls = "https", tc.client
	}
	var initial []string
	for i := 0; i < 3; i++ {
		m := &member{
			name:      fmt.Sprintf("m%d", i),
			clientURL: fmt.Sprintf("%s://127.0.0.1:%d", scheme, freePort(t)),
			peerURL:   fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
		}
		m.dir = filepath.Join(base, m.name)
		m.logPath = filepath.Join(base, m.name+".log")
		initial = append(initial, m.name+"="+m.peerURL)
		c.members = append(c.members, m)
	}
	for _, m := range c.members {
		m.initialCfg = strings.Join(initial, ",")
		m.timing = memberTiming
		if tc != nil {
			m.certFile, m.keyFile = tc.certFile, tc.keyFile
		}
		c.start(m)
	}
	t.Cleanup(func() {
		for _, m := range c.members {
			c.kill(m)
		}
		if t.Failed() {
			for _, m := range c.members {
				if b, err := os.ReadFile(m.logPath); err == nil && len(b) > 0 {
					t.Logf("%s log (last 2000 bytes):\n%s", m.name, tail(b, 2000))
				}
			}
		}
	})
	c.waitLeader(20 * time.Second)
	return c
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// start (re)starts a member process with its data directory.
func (c *cluster) start(m *member) {
	c.t.Helper()
	log, err := os.OpenFile(m.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+roleMemb,
		argsEnv+"="+strings.Join([]string{m.name, m.dir, m.clientURL, m.peerURL, m.initialCfg, m.certFile, m.keyFile, m.timing}, "\n"))
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	m.cmd = cmd
	m.exited = make(chan struct{})
	go func(ch chan struct{}) { _ = cmd.Wait(); close(ch) }(m.exited)
}

// kill SIGKILLs a member and waits for it to be gone.
func (c *cluster) kill(m *member) {
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGKILL)
	<-m.exited
	m.cmd = nil
}

func (c *cluster) endpoints() []string {
	var eps []string
	for _, m := range c.members {
		eps = append(eps, m.clientURL)
	}
	return eps
}

func (c *cluster) client(t testing.TB, eps ...string) *clientv3.Client {
	t.Helper()
	if len(eps) == 0 {
		eps = c.endpoints()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop(), TLS: c.tls})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// leader returns the member that is leader now, or nil.
func (c *cluster) leader() *member {
	for _, m := range c.members {
		if m.cmd == nil {
			continue
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{m.clientURL}, DialTimeout: time.Second, Logger: zap.NewNop(), TLS: c.tls})
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		st, err := cli.Status(ctx, m.clientURL)
		cancel()
		cli.Close()
		if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
			return m
		}
	}
	return nil
}

func (c *cluster) waitLeader(d time.Duration) *member {
	c.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if l := c.leader(); l != nil {
			return l
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.t.Fatalf("no leader after %s", d)
	return nil
}

// runMember is the child role: one embedded etcd member, until killed.
func runMember() {
	a := roleArgs()
	name, dir, clientURL, peerURL, initial := a[0], a[1], a[2], a[3], a[4]
	cu, _ := url.Parse(clientURL)
	pu, _ := url.Parse(peerURL)
	cfg := embed.NewConfig()
	cfg.Name = name
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = initial
	cfg.InitialClusterToken = "exactfs-e2e"
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"stderr"}
	if len(a) > 6 && a[5] != "" {
		cfg.ClientTLSInfo.CertFile, cfg.ClientTLSInfo.KeyFile = a[5], a[6]
	}
	if len(a) > 7 && a[7] != "" {
		var tick, election uint
		if _, err := fmt.Sscanf(a[7], "%d,%d", &tick, &election); err != nil {
			fmt.Fprintf(os.Stderr, "member %s: timing %q: %v\n", name, a[7], err)
			os.Exit(2)
		}
		cfg.TickMs, cfg.ElectionMs = tick, election
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "member %s: %v\n", name, err)
		os.Exit(1)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "member %s: %v\n", name, err)
		os.Exit(1)
	}
	err = <-e.Err()
	fmt.Fprintf(os.Stderr, "member %s stopped: %v\n", name, err)
	os.Exit(1)
}

// child is a worker process started by a test.
type child struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end of its stdin
	lines  chan string
	exited chan struct{}
	err    error
}

// startChild runs this test binary in role with args; its stdout lines
// arrive on lines, its stderr goes to the test log on failure.
func startChild(t testing.TB, role string, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role, argsEnv+"="+strings.Join(args, "\n"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{b: &stderr}
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	ch := &child{cmd: cmd, stdin: w, lines: make(chan string, 1024), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
		close(ch.lines)
		ch.err = cmd.Wait()
		close(ch.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-ch.exited
		w.Close()
		if t.Failed() && stderr.Len() > 0 {
			t.Logf("%s %v stderr:\n%s", role, args, tail([]byte(cmd.Stderr.(*lockedWriter).String()), 3000))
		}
	})
	return ch
}

// next waits for the child's next stdout line.
func (c *child) next(t testing.TB, d time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			<-c.exited
			t.Fatalf("child exited (%v) before its next line", c.err)
		}
		return l
	case <-time.After(d):
		t.Fatalf("no line from the child within %s", d)
	}
	return ""
}
