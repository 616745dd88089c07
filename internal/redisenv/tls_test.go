package redisenv_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv"
	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/redis/go-redis/v9"
)

// tlsURL returns a rediss:// URL of s with the given options.
func tlsURL(s *redistest.TLSServer, host string, options url.Values) string {
	_, port, _ := strings.Cut(s.Addr, ":")
	u := url.URL{Scheme: "rediss", User: url.UserPassword("default", s.Password), Host: host + ":" + port, RawQuery: options.Encode()}
	return u.String()
}

// TestTLSOptionsRefused: TLS options that cannot be used are bad input before anything is dialled.
func TestTLSOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ url, want string }{
		{"redis://127.0.0.1:1?ca_file=" + notPEM, "TLS options (ca_file) need a rediss:// URL"},
		{"rediss://127.0.0.1:1?ca_file=" + filepath.Join(dir, "missing.pem"), "ca_file: open " + filepath.Join(dir, "missing.pem")},
		{"rediss://127.0.0.1:1?ca_file=" + notPEM, "ca_file " + notPEM + " holds no PEM certificate"},
		{"rediss://127.0.0.1:1?cert_file=" + notPEM, "a client certificate needs both cert_file and key_file"},
		{"rediss://127.0.0.1:1?cert_file=" + notPEM + "&key_file=" + notPEM, "client certificate " + notPEM + " with key " + notPEM + ": tls: failed to find any PEM data"},
		{"rediss://127.0.0.1:1?skip_verify=maybe", `skip_verify="maybe": want true or false`},
		{"rediss://127.0.0.1:1?server_name=", "server_name is empty"},
		{"rediss://127.0.0.1:1?server_name=a&server_name=b", "option server_name given 2 times"},
		{"rediss://:secret@127.0.0.1:1?pool_size=3", `unknown option "pool_size" (the options are addr, an extra cluster seed, and for rediss:// ca_file, cert_file, key_file, server_name, skip_verify)`},
	} {
		err := redisenv.Config{Backend: redisenv.BackendExternal, URL: tt.url}.Validate()
		if !errors.Is(err, redisenv.ErrBadConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%s) = %v; want ErrBadConfig containing %q", tt.url, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("Validate(%s) shows the password: %v", tt.url, err)
		}
	}
}

// TestExternalTLS is the regression test of issue 28 item 17: a rediss:// URL reaches a
// redis-server that speaks only TLS, with certificates the test made, through the CA file, a
// client certificate (with and without tls-auth-clients), a server name or no check at all; a
// certificate that cannot be verified, a missing client certificate and a plain port are bad
// configuration with the reason, not "cannot reach".
func TestExternalTLS(t *testing.T) {
	for _, clientAuth := range []bool{false, true} {
		t.Run(map[bool]string{false: "tls-auth-clients no", true: "tls-auth-clients yes"}[clientAuth], func(t *testing.T) {
			s := redistest.StartTLS(t, clientAuth)
			client := url.Values{"ca_file": {s.CAFile}, "cert_file": {s.CertFile}, "key_file": {s.KeyFile}}
			withCA := url.Values{"ca_file": {s.CAFile}}
			if clientAuth {
				withCA = client
			}
			with := func(extra url.Values) url.Values {
				out := url.Values{}
				for k, v := range withCA {
					out[k] = v
				}
				for k, v := range extra {
					out[k] = v
				}
				return out
			}
			ok := []struct{ name, url string }{
				{"CA file", tlsURL(s, "127.0.0.1", withCA)},
				{"client certificate", tlsURL(s, "127.0.0.1", client)},
				{"host name", tlsURL(s, "localhost", withCA)},
				{"server name", tlsURL(s, "127.0.0.1", with(url.Values{"server_name": {"localhost"}}))},
				{"no check", tlsURL(s, "127.0.0.1", with(url.Values{"skip_verify": {"true"}, "ca_file": nil}))},
			}
			for _, tt := range ok {
				t.Run(tt.name, func(t *testing.T) {
					checkTLSTarget(t, tt.url)
				})
			}
			bad := []struct{ name, url, want string }{
				{"system CAs", tlsURL(s, "127.0.0.1", with(url.Values{"ca_file": nil})), "the server's TLS certificate cannot be verified: x509: certificate signed by unknown authority"},
				{"another CA", tlsURL(s, "127.0.0.1", with(url.Values{"ca_file": {s.OtherCAFile}})), "certificate signed by unknown authority"},
				{"wrong server name", tlsURL(s, "127.0.0.1", with(url.Values{"server_name": {"redis.example"}})),
					"x509: certificate is valid for localhost, not redis.example (name the host the certificate is for with ?server_name=NAME"},
			}
			if clientAuth {
				bad = append(bad, struct{ name, url, want string }{"no client certificate", tlsURL(s, "127.0.0.1", url.Values{"ca_file": {s.CAFile}}),
					"the server refused the TLS handshake: tls: certificate required (the server wants a client certificate it trusts"})
			}
			// A connection cut right after the handshake (a reset where the alert was expected:
			// TLS 1.3 ends the client's handshake before the server checks its certificate) is
			// explained by dialling again and reading the server's alert; without client
			// authentication nothing is sent and the cut stays unexplained.
			t.Run("cut after the handshake", func(t *testing.T) {
				pem, err := os.ReadFile(s.CAFile)
				if err != nil {
					t.Fatal(err)
				}
				roots := x509.NewCertPool()
				roots.AppendCertsFromPEM(pem)
				o := &redis.Options{Addr: s.Addr, TLSConfig: &tls.Config{RootCAs: roots, ServerName: "localhost", MinVersion: tls.VersionTLS12}}
				alert := redisenv.TLSAlertAfterHandshake(context.Background(), o, fmt.Errorf("write: %w", syscall.ECONNRESET))
				if clientAuth && (alert == nil || !strings.Contains(alert.Error(), "certificate required")) {
					t.Errorf("TLSAlertAfterHandshake = %v; want the server's alert, certificate required", alert)
				}
				if !clientAuth && alert != nil {
					t.Errorf("TLSAlertAfterHandshake = %v; want nil from a server that wants no client certificate", alert)
				}
				if alert := redisenv.TLSAlertAfterHandshake(context.Background(), o, errors.New("ERR unknown")); alert != nil {
					t.Errorf("TLSAlertAfterHandshake(a server's error reply) = %v; want nil", alert)
				}
			})
			for _, tt := range bad {
				t.Run(tt.name, func(t *testing.T) {
					begin := time.Now()
					target, err := redisenv.Start(context.Background(), redisenv.Config{Backend: redisenv.BackendExternal, URL: tt.url})
					if err == nil {
						_ = target.Stop(context.Background())
						t.Fatalf("Start(%s) succeeded; want an error", tt.url)
					}
					if !errors.Is(err, redisenv.ErrBadConfig) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), s.Password) {
						t.Errorf("Start = %v; want ErrBadConfig containing %q, without the password", err, tt.want)
					}
					if took := time.Since(begin); took > 2*time.Second {
						t.Errorf("Start took %s; a refused handshake is known at once", took)
					}
				})
			}
		})
	}
}

// TestExternalTLSPlainPort: rediss:// to a redis-server's plain port never completes the
// handshake (Redis waits for the end of an inline command that never comes): unreachable, with a
// hint that the port may not speak TLS.
func TestExternalTLSPlainPort(t *testing.T) {
	needRedisServer(t)
	plain := startT(t, redisenv.Config{Backend: redisenv.BackendProcess})
	u := url.URL{Scheme: "rediss", User: url.UserPassword("default", plain.Password), Host: plain.Masters()[0]}
	_, err := redisenv.Start(context.Background(), redisenv.Config{Backend: redisenv.BackendExternal, URL: u.String()})
	if !errors.Is(err, redisenv.ErrUnavailable) || !strings.Contains(err.Error(), "over TLS (a port that does not speak TLS never answers the handshake: use redis:// for a plain one)") {
		t.Errorf("Start(rediss:// to a plain port) = %v; want ErrUnavailable with the hint", err)
	}
}

// checkTLSTarget starts an external target at rawURL and writes and reads a key through its
// client and through an extra client.
func checkTLSTarget(t *testing.T, rawURL string) {
	t.Helper()
	target := startT(t, redisenv.Config{Backend: redisenv.BackendExternal, URL: rawURL})
	if !target.TLS() {
		t.Errorf("TLS() = false for %s", rawURL)
	}
	ctx := context.Background()
	const key = "limitbench:tls-test"
	extra := target.NewClient(redisenv.ClientOptions{PoolSize: 2})
	if err := target.Client.Set(ctx, key, "x", time.Minute).Err(); err != nil {
		t.Fatalf("SET over TLS: %v", err)
	}
	if got, err := extra.Get(ctx, key).Result(); err != nil || got != "x" {
		t.Errorf("GET over TLS from an extra client = %q, %v; want x", got, err)
	}
	if err := target.CleanupPrefix(ctx, "limitbench:tls-"); err != nil {
		t.Errorf("CleanupPrefix over TLS: %v", err)
	}
}
