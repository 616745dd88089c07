package redisenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// The TLS options of a rediss:// URL (see Config.URL). skip_verify is go-redis's own (ParseURL),
// with its meaning; the others are limitbench's, named in the same style.
const (
	optCAFile     = "ca_file"
	optCertFile   = "cert_file"
	optKeyFile    = "key_file"
	optServerName = "server_name"
	optSkipVerify = "skip_verify"
)

// tlsOptions are the URL options parseTLS reads.
var tlsOptions = []string{optCAFile, optCertFile, optKeyFile, optServerName, optSkipVerify}

// tlsSettings is the TLS configuration of a rediss:// target.
type tlsSettings struct {
	base *tls.Config
	// serverName is the server_name option: the name every node's certificate is checked
	// against; "" checks each node's host name (the URL's host for a node known by its IP).
	serverName string
	// caFile, certFile and keyFile are the files the options named, for redis-cli's flags.
	caFile, certFile, keyFile string
}

// config returns a TLS config for addr: the server name checked is the server_name option, else
// addr's host when it is a name, else the URL's host ("" for addr keeps the URL's host).
func (s *tlsSettings) config(addr string) *tls.Config {
	c := s.base.Clone()
	if s.serverName != "" {
		c.ServerName = s.serverName
		return c
	}
	if host, _, err := net.SplitHostPort(addr); err == nil && addr != "" && net.ParseIP(host) == nil {
		c.ServerName = host
	}
	return c
}

// parseTLS reads the TLS options of a URL (its scheme and query; redacted is the URL as errors
// show it): nil for redis:// (which refuses TLS options), else the settings of rediss:// with the
// URL's host as the default server name. The files are read now, so that a missing or bad one is
// bad input before anything starts. Errors wrap ErrBadConfig.
func parseTLS(scheme, host, redacted string, query url.Values) (*tlsSettings, error) {
	bad := func(format string, args ...any) (*tlsSettings, error) {
		return nil, fmt.Errorf("%w: URL %s: "+format, append([]any{ErrBadConfig, redacted}, args...)...)
	}
	var given []string
	for _, name := range tlsOptions {
		if vs, ok := query[name]; ok {
			if len(vs) > 1 {
				return bad("option %s given %d times", name, len(vs))
			}
			given = append(given, name)
		}
	}
	if scheme != "rediss" {
		if len(given) > 0 {
			return bad("TLS options (%s) need a rediss:// URL", strings.Join(given, ", "))
		}
		return nil, nil
	}
	s := &tlsSettings{base: &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host},
		caFile: query.Get(optCAFile), certFile: query.Get(optCertFile), keyFile: query.Get(optKeyFile),
		serverName: query.Get(optServerName)}
	if slices.Contains(given, optServerName) && s.serverName == "" {
		return bad("%s is empty", optServerName)
	}
	if slices.Contains(given, optSkipVerify) {
		skip, err := strconv.ParseBool(query.Get(optSkipVerify))
		if err != nil {
			return bad("%s=%q: want true or false", optSkipVerify, query.Get(optSkipVerify))
		}
		s.base.InsecureSkipVerify = skip
	}
	if s.caFile != "" {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return bad("%s: %v", optCAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return bad("%s %s holds no PEM certificate", optCAFile, s.caFile)
		}
		s.base.RootCAs = pool
	}
	switch {
	case (s.certFile == "") != (s.keyFile == ""):
		return bad("a client certificate needs both %s and %s", optCertFile, optKeyFile)
	case s.certFile != "":
		pair, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
		if err != nil {
			return bad("client certificate %s with key %s: %v", s.certFile, s.keyFile, err)
		}
		s.base.Certificates = []tls.Certificate{pair}
	}
	return s, nil
}

// tlsProblem explains err when it is a TLS handshake that failed for a reason of configuration
// (a certificate that cannot be verified, a client certificate missing or refused, a port that
// does not speak TLS); "" for any other error.
func tlsProblem(err error, settings *tlsSettings) string {
	var verr *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	var op *net.OpError
	switch {
	case errors.As(err, &verr):
		hint := "give the CA that signed it with ?" + optCAFile + "=FILE"
		var host x509.HostnameError
		if errors.As(verr.Err, &host) {
			hint = "name the host the certificate is for with ?" + optServerName + "=NAME"
		}
		return fmt.Sprintf("the server's TLS certificate cannot be verified: %v (%s, or skip the check with ?%s=true)", verr.Err, hint, optSkipVerify)
	case errors.As(err, &rec):
		return "the server does not answer TLS (a plain port? use redis:// for it)"
	case errors.As(err, &op) && op.Op == "remote error":
		why := "the server wants a client certificate it trusts: give one with ?" + optCertFile + "=FILE&" + optKeyFile + "=FILE"
		if settings != nil && settings.certFile != "" {
			why = "the server does not accept the client certificate " + settings.certFile
		}
		return fmt.Sprintf("the server refused the TLS handshake: %v (%s)", op.Err, why)
	}
	return ""
}

// RedisCLIArgs returns the redis-cli flags that reach the target as limitbench does: --tls and
// its certificate flags for a rediss:// target, nil otherwise.
func (t *Target) RedisCLIArgs() []string {
	s := t.tlsConn
	if s == nil {
		return nil
	}
	args := []string{"--tls"}
	for _, f := range []struct{ flag, value string }{{"--cacert", s.caFile}, {"--cert", s.certFile}, {"--key", s.keyFile}, {"--sni", s.serverName}} {
		if f.value != "" {
			args = append(args, f.flag, f.value)
		}
	}
	if s.base.InsecureSkipVerify {
		args = append(args, "--insecure")
	}
	return args
}

// tlsAlertAfterHandshake tells why a TLS connection was cut right after its handshake. Under TLS
// 1.3 the client's side of the handshake ends before the server has checked the client's
// certificate, so a server that wants one (tls-auth-clients yes) refuses it with an alert that the
// client only reads later; when the client writes its first command first, the connection may
// already be closed and the client sees "connection reset" or EOF instead of the alert. When err is
// such a cut on a TLS connection, this dials addr once more, writes nothing, and reads what the
// server sends: its alert (a *net.OpError "remote error") is returned. nil when err is no such cut,
// o has no TLS, or the server sends no alert within a second (a cut for some other reason).
func tlsAlertAfterHandshake(ctx context.Context, o *redis.Options, err error) error {
	if o.TLSConfig == nil || !(errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	d := tls.Dialer{Config: o.TLSConfig.Clone()}
	conn, derr := d.DialContext(ctx, "tcp", o.Addr)
	var op *net.OpError
	if derr != nil {
		if errors.As(derr, &op) && op.Op == "remote error" {
			return derr
		}
		return nil
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(time.Second))
	_, rerr := conn.Read(make([]byte, 1))
	if errors.As(rerr, &op) && op.Op == "remote error" {
		return rerr
	}
	return nil
}
