// Package remotewrite pushes gathered Prometheus metric families to a Prometheus remote-write
// endpoint, remote write 1.0: a prometheus.WriteRequest in protobuf, snappy block-compressed,
// POSTed with the protocol's headers. The WriteRequest is encoded here with protowire (its four
// messages have six fields between them), so that limitbench needs none of Prometheus's own
// server modules.
package remotewrite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/snappy"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
)

// Output pushes to one remote-write URL. It implements metrics.Output.
type Output struct {
	url    string
	client *http.Client
}

// New returns the output that pushes to url.
func New(url string) *Output {
	return &Output{url: url, client: &http.Client{Timeout: 30 * time.Second}}
}

// Start does nothing: the first push reaches the endpoint.
func (*Output) Start(context.Context) error { return nil }

// Stop does nothing: each push is complete in itself.
func (*Output) Stop(context.Context) error { return nil }

// AddSamples pushes every sample of families, timestamped at, in one request. A reply other
// than 2xx is an error that quotes the endpoint's reply.
func (w *Output) AddSamples(ctx context.Context, families []*dto.MetricFamily, at time.Time) error {
	body := snappy.Encode(nil, Encode(TimeSeries(families), at))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("remote write %s: %w", w.url, err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", "limitbench")
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("remote write %s: %w", w.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("remote write %s: %s: %s", w.url, resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Label is one label of a series.
type Label struct{ Name, Value string }

// Series is one time series with one sample: its labels, __name__ among them, sorted by name.
type Series struct {
	Labels []Label
	Value  float64
}

// TimeSeries flattens families into series as Prometheus stores them: a histogram becomes its
// _bucket series (one per bound, and +Inf), _sum and _count.
func TimeSeries(families []*dto.MetricFamily) []Series {
	var out []Series
	for _, f := range families {
		for _, m := range f.GetMetric() {
			add := func(name string, v float64, extra ...Label) {
				ls := []Label{{"__name__", name}}
				for _, lp := range m.GetLabel() {
					ls = append(ls, Label{lp.GetName(), lp.GetValue()})
				}
				ls = append(ls, extra...)
				slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
				out = append(out, Series{Labels: ls, Value: v})
			}
			name := f.GetName()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					add(name+"_bucket", float64(b.GetCumulativeCount()), Label{"le", formatBound(b.GetUpperBound())})
				}
				add(name+"_bucket", float64(h.GetSampleCount()), Label{"le", "+Inf"})
				add(name+"_sum", h.GetSampleSum())
				add(name+"_count", float64(h.GetSampleCount()))
			case dto.MetricType_UNTYPED:
				add(name, m.GetUntyped().GetValue())
			}
		}
	}
	return out
}

// formatBound writes a bucket's bound as Prometheus's exposition does.
func formatBound(b float64) string {
	if math.IsInf(b, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(b, 'g', -1, 64)
}

// Encode returns the WriteRequest of series, every sample timestamped at:
//
//	WriteRequest { repeated TimeSeries timeseries = 1; }
//	TimeSeries   { repeated Label labels = 1; repeated Sample samples = 2; }
//	Label        { string name = 1; string value = 2; }
//	Sample       { double value = 1; int64 timestamp = 2; }  // milliseconds since the epoch
func Encode(series []Series, at time.Time) []byte {
	var req []byte
	ms := at.UnixMilli()
	for _, s := range series {
		var ts []byte
		for _, l := range s.Labels {
			var lb []byte
			lb = protowire.AppendTag(lb, 1, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Name)
			lb = protowire.AppendTag(lb, 2, protowire.BytesType)
			lb = protowire.AppendString(lb, l.Value)
			ts = protowire.AppendTag(ts, 1, protowire.BytesType)
			ts = protowire.AppendBytes(ts, lb)
		}
		var sb []byte
		sb = protowire.AppendTag(sb, 1, protowire.Fixed64Type)
		sb = protowire.AppendFixed64(sb, math.Float64bits(s.Value))
		sb = protowire.AppendTag(sb, 2, protowire.VarintType)
		sb = protowire.AppendVarint(sb, uint64(ms))
		ts = protowire.AppendTag(ts, 2, protowire.BytesType)
		ts = protowire.AppendBytes(ts, sb)
		req = protowire.AppendTag(req, 1, protowire.BytesType)
		req = protowire.AppendBytes(req, ts)
	}
	return req
}
