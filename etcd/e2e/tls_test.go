//go:build unix

package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCerts is a throwaway CA and a server certificate for 127.0.0.1.
type testCerts struct {
	caFile, certFile, keyFile string
	client                    *tls.Config
}

func makeCerts(t testing.TB) *testCerts {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "exactfs e2e CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, srv, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &testCerts{
		caFile:   write("ca.pem", "CERTIFICATE", caDER),
		certFile: write("server.pem", "CERTIFICATE", der),
		keyFile:  write("server-key.pem", "EC PRIVATE KEY", keyDER),
		client:   &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	}
}

// TestCLIOverTLS: etcds:// with the CA in $EXACTFS_ETCD_CACERT works; without
// it, the certificate is refused within the budget (74) and the message says
// why; etcd:// (plain) against a TLS cluster fails the same way.
func TestCLIOverTLS(t *testing.T) {
	tc := makeCerts(t)
	c := startClusterTLS(t, tc)
	var hosts []string
	for _, e := range c.endpoints() {
		hosts = append(hosts, strings.TrimPrefix(e, "https://"))
	}
	url := "etcds://" + strings.Join(hosts, ",") + "/tls/counter"
	ca := []string{"EXACTFS_ETCD_CACERT=" + tc.caFile}
	for i := 0; i < 2; i++ {
		runCLI(t, ca, "", "update", url, "--", "sh", "-c", incr).want(t, 0)
	}
	r := runCLI(t, ca, "", "status", url)
	r.want(t, 0)
	if !strings.Contains(r.stdout, "free") {
		t.Errorf("status over TLS:\n%s", r.stdout)
	}
	gr, err := c.client(t).Get(t.Context(), "/tls/counter")
	if err != nil || len(gr.Kvs) != 1 || strings.TrimSpace(string(gr.Kvs[0].Value)) != "2" {
		t.Fatalf("counter over TLS: %v %v; want 2", gr, err)
	}
	r = runCLI(t, nil, "", "update", "--op-timeout", "2s", url, "--", "cat")
	r.want(t, 74, "no answer from etcd at https://", "TLS: tls: failed to verify certificate")
	t.Logf("without the CA:\n%s", r.stderr)
	r = runCLI(t, []string{"EXACTFS_ETCD_CACERT=" + filepath.Join(t.TempDir(), "missing.pem")}, "", "update", url, "--", "cat")
	r.want(t, 74, "EXACTFS_ETCD_CACERT")
	r = runCLI(t, nil, "", "update", "--op-timeout", "2s", "etcd://"+hosts[0]+"/tls/counter", "--", "cat")
	r.want(t, 74, "no answer from etcd at http://")
}
