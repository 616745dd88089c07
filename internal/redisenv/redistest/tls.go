package redistest

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TLSServer is a redis-server that speaks only TLS, with certificates made for the test: a CA,
// the server's certificate for 127.0.0.1 and localhost, and a client certificate, all signed by
// the CA; and a second CA that signed nothing, for a certificate that cannot be verified.
type TLSServer struct {
	// Addr is the TLS port, 127.0.0.1:PORT.
	Addr string
	// Password is the default user's.
	Password string
	// CAFile is the PEM file of the CA; CertFile and KeyFile are the client certificate and
	// its key; OtherCAFile is a CA that signed neither.
	CAFile, CertFile, KeyFile, OtherCAFile string
}

// StartTLS starts a redis-server on a free loopback port that accepts TLS only, with
// tls-auth-clients yes when clientAuth (a client must show a certificate the CA signed) and no
// otherwise, and registers its stop. It skips the test when redis-server is not on PATH.
func StartTLS(t testing.TB, clientAuth bool) *TLSServer {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skipf("redis-server is not on PATH (install redis-server; CI does): %v", err)
	}
	dir := t.TempDir()
	s := &TLSServer{Password: "tls-test-password", CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "client.pem"),
		KeyFile: filepath.Join(dir, "client-key.pem"), OtherCAFile: filepath.Join(dir, "other-ca.pem")}
	ca := newCA(t, "limitbench test CA", s.CAFile)
	newCA(t, "limitbench other CA", s.OtherCAFile)
	serverCert, serverKey := filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, serverCert, serverKey)
	ca.sign(t, &x509.Certificate{Subject: pkix.Name{CommonName: "limitbench client"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, s.CertFile, s.KeyFile)

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Addr = l.Addr().String()
	_ = l.Close()
	_, port, _ := net.SplitHostPort(s.Addr)
	auth := map[bool]string{true: "yes", false: "no"}[clientAuth]
	conf := fmt.Sprintf("bind 127.0.0.1\nport 0\ntls-port %s\ntls-cert-file %s\ntls-key-file %s\ntls-ca-cert-file %s\n"+
		"tls-auth-clients %s\nrequirepass %s\nsave \"\"\nappendonly no\ndir %s\n", port, serverCert, serverKey, s.CAFile, auth, s.Password, dir)
	confFile := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", confFile)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if err := s.waitReady(ca.pool); err != nil {
		t.Fatalf("redistest: TLS redis-server at %s: %v\n%s", s.Addr, err, log.String())
	}
	return s
}

// waitReady waits up to 10 s for the server to answer PING over TLS with the client certificate.
func (s *TLSServer) waitReady(roots *x509.CertPool) error {
	pair, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		return err
	}
	cfg := &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, ServerName: "127.0.0.1"}
	var last error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if last = s.ping(cfg); last == nil {
			return nil
		}
	}
	return last
}

func (s *TLSServer) ping(cfg *tls.Config) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := (&tls.Dialer{Config: cfg}).DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprintf(c, "AUTH %s\r\nPING\r\n", s.Password); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	for _, want := range []string{"+OK", "+PONG"} {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.TrimSpace(line) != want {
			return fmt.Errorf("got %q, want %s", line, want)
		}
	}
	return nil
}

// testCA is a certificate authority made for a test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

// newCA makes a self-signed CA named name and writes its certificate to file.
func newCA(t testing.TB, name, file string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, file, "CERTIFICATE", der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// sign completes tmpl (serial, validity, key usage), signs it with a new key and writes the
// certificate to certFile and the key to keyFile.
func (ca *testCA) sign(t testing.TB, tmpl *x509.Certificate, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
}

func writePEM(t testing.TB, file, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
