package main

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/limitbench/limitbench/internal/redisenv/redistest"
	"github.com/limitbench/limitbench/result"
)

// TestRunTLSGoldens is the regression test of issue 28 item 17 through the CLI: against a
// redis-server that speaks only TLS (certificates the test made), with and without
// tls-auth-clients, a certificate that cannot be verified and a missing client certificate are
// bad input (exit 2) with the reason, found before anything runs, not "cannot reach ... within
// 4s"; with the CA file and the client certificate the run passes.
func TestRunTLSGoldens(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts Redis")
	}
	bin := buildBinary(t)
	open, auth := redistest.StartTLS(t, false), redistest.StartTLS(t, true)
	tmp := t.TempDir()
	out := filepath.Join(tmp, "out")
	smoke := suite + "smoke.yaml"
	// The options as a user writes them (paths not escaped), so that the goldens can name them.
	rediss := func(s *redistest.TLSServer, options ...string) string {
		u := url.URL{Scheme: "rediss", User: url.UserPassword("default", s.Password), Host: s.Addr, RawQuery: strings.Join(options, "&")}
		return u.String()
	}
	cases := []cliCase{
		{"tls-unknown-authority", []string{"run", "--quiet", "--redis", rediss(open), "--out", out, smoke}, exitBadInput},
		{"tls-other-ca", []string{"run", "--quiet", "--redis", rediss(open, "ca_file="+open.OtherCAFile), "--out", out, smoke}, exitBadInput},
		{"tls-no-client-certificate", []string{"run", "--quiet", "--redis", rediss(auth, "ca_file="+auth.CAFile), "--out", out, smoke}, exitBadInput},
		{"tls-options-need-rediss", []string{"run", "--quiet", "--redis", "redis://127.0.0.1:1?ca_file=" + open.CAFile, "--out", out, smoke}, exitBadInput},
	}
	runGoldens(t, bin, cases, 5*time.Second, map[string]string{"$TMP": tmp, "$OPEN": open.Addr, "$AUTH": auth.Addr,
		"$CERTS": filepath.Dir(open.CAFile), "$CERTS2": filepath.Dir(auth.CAFile), "$PASSWORD": open.Password})

	for _, tt := range []struct {
		name string
		url  string
		env  []string
	}{
		{"client certificate", rediss(auth, "ca_file="+auth.CAFile, "cert_file="+auth.CertFile, "key_file="+auth.KeyFile), nil},
		// SSL_CERT_FILE is no longer needed, and still honoured.
		{"SSL_CERT_FILE", rediss(open), []string{"SSL_CERT_FILE=" + open.CAFile}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			cmd := exec.Command(bin, "run", "--quiet", "--no-reference", "--algorithms", "gcra", "--duration", "300ms",
				"--redis", tt.url, "--out", dir, smoke)
			cmd.Env = append(os.Environ(), tt.env...)
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("run over TLS: %v\n%s", err, b)
			}
			res, err := result.Read(filepath.Join(dir, result.FileName))
			if err != nil || len(res.Entries) != 1 || res.Entries[0].Requests == 0 || res.Entries[0].Errors != 0 {
				t.Errorf("result over TLS: %v, %+v; want one entry with requests and no errors", err, res)
			}
			if strings.Contains(string(b), tt.url) {
				t.Errorf("the output shows the URL with its password:\n%s", b)
			}
		})
	}
}
