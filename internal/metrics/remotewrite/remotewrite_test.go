package remotewrite

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// decode reads a WriteRequest back with protowire, independently of Encode's order of fields.
func decode(t *testing.T, b []byte) (series []Series, stamps []int64) {
	t.Helper()
	fields := func(b []byte, each func(num protowire.Number, typ protowire.Type, b []byte) int) {
		for len(b) > 0 {
			num, typ, n := protowire.ConsumeTag(b)
			if n < 0 {
				t.Fatalf("bad tag: %v", protowire.ParseError(n))
			}
			b = b[n:]
			m := each(num, typ, b)
			if m < 0 {
				t.Fatalf("field %d: %v", num, protowire.ParseError(m))
			}
			b = b[m:]
		}
	}
	fields(b, func(_ protowire.Number, _ protowire.Type, b []byte) int {
		ts, n := protowire.ConsumeBytes(b)
		var s Series
		fields(ts, func(num protowire.Number, _ protowire.Type, b []byte) int {
			msg, n := protowire.ConsumeBytes(b)
			switch num {
			case 1:
				var l Label
				fields(msg, func(num protowire.Number, _ protowire.Type, b []byte) int {
					v, n := protowire.ConsumeString(b)
					if num == 1 {
						l.Name = v
					} else {
						l.Value = v
					}
					return n
				})
				s.Labels = append(s.Labels, l)
			case 2:
				fields(msg, func(num protowire.Number, typ protowire.Type, b []byte) int {
					if num == 1 {
						v, n := protowire.ConsumeFixed64(b)
						s.Value = math.Float64frombits(v)
						return n
					}
					v, n := protowire.ConsumeVarint(b)
					stamps = append(stamps, int64(v))
					return n
				})
			}
			return n
		})
		series = append(series, s)
		return n
	})
	return series, stamps
}

func TestEncodeHistogram(t *testing.T) {
	fam := &dto.MetricFamily{Name: proto.String("x_seconds"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{{
		Label: []*dto.LabelPair{{Name: proto.String("run_id"), Value: proto.String("r")}, {Name: proto.String("algorithm"), Value: proto.String("a")}},
		Histogram: &dto.Histogram{SampleCount: proto.Uint64(5), SampleSum: proto.Float64(1.5), Bucket: []*dto.Bucket{
			{UpperBound: proto.Float64(0.001), CumulativeCount: proto.Uint64(2)}, {UpperBound: proto.Float64(1), CumulativeCount: proto.Uint64(4)}}},
	}}}
	at := time.UnixMilli(1_700_000_000_123)
	got, stamps := decode(t, Encode(TimeSeries([]*dto.MetricFamily{fam}), at))
	l := func(name, le string) []Label {
		ls := []Label{{"__name__", name}, {"algorithm", "a"}, {"run_id", "r"}}
		if le != "" {
			ls = slices.Insert(ls, 2, Label{"le", le})
		}
		return ls
	}
	want := []Series{{l("x_seconds_bucket", "0.001"), 2}, {l("x_seconds_bucket", "1"), 4}, {l("x_seconds_bucket", "+Inf"), 5},
		{l("x_seconds_sum", ""), 1.5}, {l("x_seconds_count", ""), 5}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("series (-want +got):\n%s", d)
	}
	for _, s := range stamps {
		if s != at.UnixMilli() {
			t.Errorf("timestamp %d; want %d", s, at.UnixMilli())
		}
	}
}
