package otlp

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/proto"
)

func TestMetrics(t *testing.T) {
	label := []*dto.LabelPair{{Name: proto.String("algorithm"), Value: proto.String("gcra")}}
	fams := []*dto.MetricFamily{
		{Name: proto.String("x_admitted_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{{Label: label, Counter: &dto.Counter{Value: proto.Float64(7)}}}},
		{Name: proto.String("x_latency_seconds"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{Label: label,
			Histogram: &dto.Histogram{SampleCount: proto.Uint64(5), SampleSum: proto.Float64(2), Bucket: []*dto.Bucket{
				{UpperBound: proto.Float64(0.1), CumulativeCount: proto.Uint64(2)}, {UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(4)}}}}}},
	}
	start, at := time.Unix(100, 0), time.Unix(200, 0)
	ms := Metrics(fams, start, at)
	if len(ms) != 2 || ms[0].Name != "x_admitted" || ms[1].Name != "x_latency_seconds" || ms[1].Unit != "s" {
		t.Fatalf("names and units: %+v", ms)
	}
	sum, ok := ms[0].Data.(metricdata.Sum[float64])
	if !ok || !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality || sum.DataPoints[0].Value != 7 {
		t.Errorf("counter: %+v", ms[0].Data)
	}
	if v, _ := sum.DataPoints[0].Attributes.Value("algorithm"); v.AsString() != "gcra" {
		t.Errorf("counter's attributes: %v", sum.DataPoints[0].Attributes)
	}
	h := ms[1].Data.(metricdata.Histogram[float64]).DataPoints[0]
	// Cumulative 2, 4 of 5 become per-bucket counts 2, 2 and 1 above every bound.
	if d := cmp.Diff([]uint64{2, 2, 1}, h.BucketCounts); d != "" || h.Count != 5 || h.Sum != 2 || !h.StartTime.Equal(start) || !h.Time.Equal(at) {
		t.Errorf("histogram %+v; bucket counts (-want +got):\n%s", h, d)
	}
}
