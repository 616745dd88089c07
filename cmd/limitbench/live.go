package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/limitbench/limitbench/internal/metrics"
)

// liveFlags are the live metrics flags, the same on run, capacity and hunt.
type liveFlags struct{ o metrics.Options }

func (f *liveFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.o.Addr, "metrics-addr", "", "serve the run's live figures as Prometheus metrics at http://ADDR/metrics during the run, such as 127.0.0.1:9464 (default off; docs/live-metrics.md)")
	fs.StringVar(&f.o.RemoteWrite, "prometheus-remote-write", "", "push the live figures to this Prometheus remote-write URL (remote write 1.0) every 5s and at the end, such as http://127.0.0.1:9090/api/v1/write")
	fs.StringVar(&f.o.OTLP, "otlp-endpoint", "", "push the live figures to this OTLP/HTTP endpoint every 5s and at the end, such as http://127.0.0.1:4318 (path /v1/metrics unless the URL has one)")
}

// start validates the flags and starts the exporter (nil when no flag asks for one); an option
// that cannot work, or an address it cannot listen on, is bad input. stop pushes the last
// samples and says on stderr what failed; it never fails the command (the results are written).
func (f *liveFlags) start(ctx context.Context, stderr io.Writer) (x *metrics.Exporter, stop func(), err error) {
	o := f.o
	o.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	if x, err = metrics.Start(ctx, o); err != nil {
		return nil, func() {}, badInput(err)
	}
	if a := x.Addr(); a != "" {
		fmt.Fprintf(stderr, "live metrics at http://%s/metrics\n", a)
	}
	return x, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		if err := x.Stop(sctx); err != nil {
			fmt.Fprintf(stderr, "warning: %v\n", err)
		}
	}, nil
}
