package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// server is the Output that serves the registry at /metrics (Prometheus pulls, so AddSamples
// does nothing).
type server struct {
	addr string
	reg  *prometheus.Registry
	ln   net.Listener
	srv  *http.Server
}

// Start listens on the address and serves /metrics; an address it cannot listen on is an error
// wrapping ErrBadOption.
func (s *server) Start(context.Context) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return fmt.Errorf("%w: --metrics-addr %s: %w", ErrBadOption, s.addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	s.ln, s.srv = ln, &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return nil
}

func (s *server) AddSamples(context.Context, []*dto.MetricFamily, time.Time) error { return nil }

// Stop closes the server, letting scrapes under way finish (as long as ctx lets them).
func (s *server) Stop(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("live metrics: stop serving %s: %w", s.addr, err)
	}
	return nil
}
