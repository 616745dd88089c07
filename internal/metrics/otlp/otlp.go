// Package otlp pushes gathered Prometheus metric families to an OTLP/HTTP receiver with the
// OpenTelemetry Go SDK's exporter (otlpmetrichttp, protobuf): counters become cumulative
// monotonic sums, gauges gauges and histograms explicit-bucket histograms, each data point with
// the series' labels as attributes, under the resource service.name=limitbench.
package otlp

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Output pushes to one OTLP/HTTP endpoint. It implements metrics.Output.
type Output struct {
	endpoint string
	start    time.Time
	exp      *otlpmetrichttp.Exporter
	res      *resource.Resource
}

// New returns the output that pushes to endpoint: a URL whose path, when it has none, is the
// OTLP default /v1/metrics. Cumulative series start at start.
func New(endpoint string, start time.Time) *Output {
	return &Output{endpoint: endpoint, start: start,
		res: resource.NewSchemaless(attribute.String("service.name", "limitbench"))}
}

// Start makes the exporter (no connection is opened until the first push).
func (o *Output) Start(ctx context.Context) error {
	u, err := url.Parse(o.endpoint)
	if err != nil {
		return fmt.Errorf("--otlp-endpoint %q: %w", o.endpoint, err)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1/metrics"
	}
	o.exp, err = otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(u.String()),
		otlpmetrichttp.WithTimeout(10*time.Second), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	if err != nil {
		return fmt.Errorf("--otlp-endpoint %q: %w", o.endpoint, err)
	}
	return nil
}

// Stop shuts the exporter down.
func (o *Output) Stop(ctx context.Context) error {
	if err := o.exp.Shutdown(ctx); err != nil {
		return fmt.Errorf("otlp %s: %w", o.endpoint, err)
	}
	return nil
}

// AddSamples pushes families as they are at at.
func (o *Output) AddSamples(ctx context.Context, families []*dto.MetricFamily, at time.Time) error {
	rm := &metricdata.ResourceMetrics{Resource: o.res, ScopeMetrics: []metricdata.ScopeMetrics{{
		Scope:   instrumentation.Scope{Name: "github.com/limitbench/limitbench"},
		Metrics: Metrics(families, o.start, at),
	}}}
	if err := o.exp.Export(ctx, rm); err != nil {
		return fmt.Errorf("otlp %s: %w", o.endpoint, err)
	}
	return nil
}

// Metrics converts families to OpenTelemetry metric data: a counter's name loses its _total
// (OpenTelemetry's convention: a receiver that stores them for Prometheus adds it back), and
// a _seconds series has unit "s".
func Metrics(families []*dto.MetricFamily, start, at time.Time) []metricdata.Metrics {
	var out []metricdata.Metrics
	for _, f := range families {
		m := metricdata.Metrics{Name: f.GetName(), Description: f.GetHelp()}
		if strings.HasSuffix(m.Name, "_seconds") {
			m.Unit = "s"
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			m.Name = strings.TrimSuffix(m.Name, "_total")
			sum := metricdata.Sum[float64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
			for _, pm := range f.GetMetric() {
				sum.DataPoints = append(sum.DataPoints, metricdata.DataPoint[float64]{Attributes: attributes(pm),
					StartTime: start, Time: at, Value: pm.GetCounter().GetValue()})
			}
			m.Data = sum
		case dto.MetricType_GAUGE:
			var g metricdata.Gauge[float64]
			for _, pm := range f.GetMetric() {
				g.DataPoints = append(g.DataPoints, metricdata.DataPoint[float64]{Attributes: attributes(pm),
					StartTime: start, Time: at, Value: pm.GetGauge().GetValue()})
			}
			m.Data = g
		case dto.MetricType_HISTOGRAM:
			h := metricdata.Histogram[float64]{Temporality: metricdata.CumulativeTemporality}
			for _, pm := range f.GetMetric() {
				h.DataPoints = append(h.DataPoints, histogramPoint(pm, start, at))
			}
			m.Data = h
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

// histogramPoint turns a Prometheus histogram (cumulative counts per bound) into an OTLP one
// (a count per bucket, the last one above every bound).
func histogramPoint(pm *dto.Metric, start, at time.Time) metricdata.HistogramDataPoint[float64] {
	h := pm.GetHistogram()
	p := metricdata.HistogramDataPoint[float64]{Attributes: attributes(pm), StartTime: start, Time: at,
		Count: h.GetSampleCount(), Sum: h.GetSampleSum()}
	var prev uint64
	for _, b := range h.GetBucket() {
		p.Bounds = append(p.Bounds, b.GetUpperBound())
		p.BucketCounts = append(p.BucketCounts, b.GetCumulativeCount()-prev)
		prev = b.GetCumulativeCount()
	}
	p.BucketCounts = append(p.BucketCounts, h.GetSampleCount()-prev)
	return p
}

func attributes(pm *dto.Metric) attribute.Set {
	kv := make([]attribute.KeyValue, 0, len(pm.GetLabel()))
	for _, l := range pm.GetLabel() {
		kv = append(kv, attribute.String(l.GetName(), l.GetValue()))
	}
	return attribute.NewSet(kv...)
}
