package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/limitbench/limitbench/internal/metrics/otlp"
	"github.com/limitbench/limitbench/internal/metrics/remotewrite"
)

// DefaultPushEvery is how often remote write and OTLP push when Options.PushEvery is zero.
const DefaultPushEvery = 5 * time.Second

// ErrBadOption is the error of an Options that cannot work (a malformed address or URL); it
// is bad input, reported before anything starts.
var ErrBadOption = errors.New("bad live metrics option")

// Options say where a run's live metrics go; the zero value sends them nowhere.
type Options struct {
	// Addr, when set, is the address (host:port, such as 127.0.0.1:9464) where /metrics is
	// served during the run (--metrics-addr). Port 0 picks a free one (Exporter.Addr).
	Addr string
	// RemoteWrite, when set, is a Prometheus remote-write URL (remote write 1.0) the series are
	// pushed to every PushEvery and at the end (--prometheus-remote-write).
	RemoteWrite string
	// OTLP, when set, is an OTLP/HTTP endpoint URL (http://127.0.0.1:4318, or a URL ending in
	// /v1/metrics) the series are pushed to every PushEvery and at the end (--otlp-endpoint).
	OTLP string
	// PushEvery is the push interval (default DefaultPushEvery).
	PushEvery time.Duration
	// Logf, when set, is told of a push that failed (once per output until one succeeds).
	Logf func(format string, args ...any)
}

// Enabled reports whether o sends the metrics anywhere.
func (o Options) Enabled() bool { return o.Addr != "" || o.RemoteWrite != "" || o.OTLP != "" }

// Validate reports every problem of o at once, each wrapping ErrBadOption.
func (o Options) Validate() error {
	var errs []error
	if o.Addr != "" {
		if _, _, err := net.SplitHostPort(o.Addr); err != nil {
			errs = append(errs, fmt.Errorf("%w: --metrics-addr %q: want host:port, such as 127.0.0.1:9464", ErrBadOption, o.Addr))
		}
	}
	for _, f := range []struct{ flag, v string }{{"--prometheus-remote-write", o.RemoteWrite}, {"--otlp-endpoint", o.OTLP}} {
		if f.v == "" {
			continue
		}
		if u, err := url.Parse(f.v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%w: %s %q: want an http or https URL", ErrBadOption, f.flag, f.v))
		}
	}
	if o.PushEvery < 0 {
		errs = append(errs, fmt.Errorf("%w: push interval must be >= 0, got %s", ErrBadOption, o.PushEvery))
	}
	return errors.Join(errs...)
}

// Output is one destination of the series (k6's output interface): Start before the run,
// AddSamples with each gathering of the registry, Stop after the run's last AddSamples.
type Output interface {
	Start(ctx context.Context) error
	AddSamples(ctx context.Context, families []*dto.MetricFamily, at time.Time) error
	Stop(ctx context.Context) error
}

// Exporter is one run's live metrics: its registry, its series and its outputs. Its methods are
// safe for concurrent use; a nil *Exporter does nothing.
type Exporter struct {
	o       Options
	reg     *prometheus.Registry
	server  *server
	outputs []Output // pushing outputs (remote write, OTLP)
	failing map[Output]bool

	mu     sync.Mutex
	series map[Labels]*series
	order  []*series

	stop chan struct{}
	done chan struct{}
}

// Start validates o and starts its outputs: it listens on o.Addr (an address it cannot listen
// on is an error), and starts pushing every o.PushEvery. It returns nil, nil when o sends the
// metrics nowhere.
func Start(ctx context.Context, o Options) (*Exporter, error) {
	if !o.Enabled() {
		return nil, nil
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.PushEvery == 0 {
		o.PushEvery = DefaultPushEvery
	}
	x := &Exporter{o: o, reg: prometheus.NewRegistry(), series: map[Labels]*series{}, failing: map[Output]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	x.reg.MustRegister(collector{x})
	if o.Addr != "" {
		x.server = &server{addr: o.Addr, reg: x.reg}
		if err := x.server.Start(ctx); err != nil {
			return nil, err
		}
	}
	if o.RemoteWrite != "" {
		x.outputs = append(x.outputs, remotewrite.New(o.RemoteWrite))
	}
	if o.OTLP != "" {
		x.outputs = append(x.outputs, otlp.New(o.OTLP, time.Now()))
	}
	for _, out := range x.outputs {
		if err := out.Start(ctx); err != nil {
			x.closeServer(ctx)
			return nil, fmt.Errorf("%w: %w", ErrBadOption, err)
		}
	}
	go x.pushLoop()
	return x, nil
}

// Addr returns the address /metrics is served on (with the port chosen when Options.Addr asked
// for port 0), or "" when it is not served.
func (x *Exporter) Addr() string {
	if x == nil || x.server == nil {
		return ""
	}
	return x.server.ln.Addr().String()
}

// Gather returns the series as they are now.
func (x *Exporter) Gather() ([]*dto.MetricFamily, error) { return x.reg.Gather() }

// Stop pushes the series one last time, stops the outputs and the server, and returns what
// failed (a destination that could not be reached: the run's results are not affected).
func (x *Exporter) Stop(ctx context.Context) error {
	if x == nil {
		return nil
	}
	close(x.stop)
	<-x.done
	errs := []error{x.push(ctx)}
	for _, out := range x.outputs {
		errs = append(errs, out.Stop(ctx))
	}
	errs = append(errs, x.closeServer(ctx))
	return errors.Join(errs...)
}

func (x *Exporter) closeServer(ctx context.Context) error {
	if x.server == nil {
		return nil
	}
	return x.server.Stop(ctx)
}

// pushLoop pushes every PushEvery until Stop.
func (x *Exporter) pushLoop() {
	defer close(x.done)
	if len(x.outputs) == 0 {
		return
	}
	t := time.NewTicker(x.o.PushEvery)
	defer t.Stop()
	for {
		select {
		case <-x.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), x.o.PushEvery)
			_ = x.push(ctx)
			cancel()
		}
	}
}

// push gathers the registry and gives it to every pushing output; a failure is told through
// Logf once until the output succeeds again, and returned.
func (x *Exporter) push(ctx context.Context) error {
	if len(x.outputs) == 0 {
		return nil
	}
	fams, err := x.reg.Gather()
	if err != nil {
		return fmt.Errorf("live metrics: gather: %w", err)
	}
	now := time.Now()
	var errs []error
	for _, out := range x.outputs {
		err := out.AddSamples(ctx, fams, now)
		if err != nil {
			errs = append(errs, fmt.Errorf("live metrics: %w", err))
			if !x.failing[out] && x.o.Logf != nil {
				x.o.Logf("warning: live metrics: %v", err)
			}
		}
		x.failing[out] = err != nil
	}
	return errors.Join(errs...)
}

// seriesOf returns the series of l, made on first use.
func (x *Exporter) seriesOf(l Labels) *series {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, ok := x.series[l]
	if !ok {
		s = newSeries(l)
		x.series[l] = s
		x.order = append(x.order, s)
	}
	return s
}

// all returns every series, in the order they were made.
func (x *Exporter) all() []*series {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]*series(nil), x.order...)
}
