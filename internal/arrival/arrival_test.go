package arrival

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/trace"
)

func TestArrivalRateAndSegments(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		a    Arrival
		span time.Duration
		at   map[time.Duration]float64
		segs []load.Piece
	}{
		{"constant", Arrival{Rate: 5}, time.Second, map[time.Duration]float64{0: 5, 999 * ms: 5},
			[]load.Piece{{From: 5, To: 5, Duration: time.Second}}},
		{"ramp", Arrival{Ramp: &Ramp{From: 0, To: 100}}, 10 * time.Second,
			map[time.Duration]float64{0: 0, 5 * time.Second: 50, 10 * time.Second: 100},
			[]load.Piece{{From: 0, To: 100, Duration: 10 * time.Second}}},
		{"steps repeat and are cut at span", Arrival{Steps: []Step{{For: 2 * time.Second, Rate: 1}, {For: time.Second, Rate: 9}}},
			5 * time.Second, map[time.Duration]float64{0: 1, 2 * time.Second: 9, 3 * time.Second: 1, 4500 * ms: 1},
			[]load.Piece{{From: 1, To: 1, Duration: 2 * time.Second}, {From: 9, To: 9, Duration: time.Second}, {From: 1, To: 1, Duration: 2 * time.Second}}},
		{"spike once", Arrival{Spike: &Spike{Base: 1, Peak: 50, At: time.Second, For: 500 * ms}}, 3 * time.Second,
			map[time.Duration]float64{0: 1, time.Second: 50, 1499 * ms: 50, 1500 * ms: 1, 2900 * ms: 1},
			[]load.Piece{{From: 1, To: 1, Duration: time.Second}, {From: 50, To: 50, Duration: 500 * ms}, {From: 1, To: 1, Duration: 1500 * ms}}},
		{"spike every 2s", Arrival{Spike: &Spike{Base: 1, Peak: 50, At: 1900 * ms, For: 200 * ms, Every: 2 * time.Second}}, 5 * time.Second,
			map[time.Duration]float64{0: 1, 1900 * ms: 50, 2050 * ms: 50, 2100 * ms: 1, 3950 * ms: 50, 4200 * ms: 1},
			[]load.Piece{{From: 1, To: 1, Duration: 1900 * ms}, {From: 50, To: 50, Duration: 200 * ms}, {From: 1, To: 1, Duration: 1800 * ms}, {From: 50, To: 50, Duration: 200 * ms}, {From: 1, To: 1, Duration: 900 * ms}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if n, segs := tt.a.PieceBound(tt.span), len(tt.a.Pieces(tt.span)); n < segs || n > segs+len(tt.a.Steps)+2 {
				t.Errorf("PieceBound(%s) = %d; want a bound of the %d pieces, within one period", tt.span, n, segs)
			}
			for at, want := range tt.at {
				if got := tt.a.RateAt(at, tt.span); got != want {
					t.Errorf("RateAt(%s, %s) = %v; want %v", at, tt.span, got, want)
				}
			}
			segs := tt.a.Pieces(tt.span)
			if diff := cmp.Diff(tt.segs, segs); diff != "" {
				t.Errorf("Segments(%s) (-want +got):\n%s", tt.span, diff)
			}
			var sum time.Duration
			var at time.Duration
			for _, s := range segs {
				if s.From == s.To && tt.a.RateAt(at, tt.span) != s.From {
					t.Errorf("piece at %s has rate %v; RateAt says %v", at, s.From, tt.a.RateAt(at, tt.span))
				}
				sum += s.Duration
				at += s.Duration
			}
			if sum != tt.span {
				t.Errorf("pieces add up to %s; want %s", sum, tt.span)
			}
		})
	}
}

// TestPieces: Pieces bounds the number of Segments from above, within one period's pieces, for
// steps and spikes of any lengths, so the validator can refuse a schedule too fine for its
// run without building it.
func TestPieces(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		ms := func(label string, lo int64) time.Duration {
			return time.Duration(rapid.Int64Range(lo, 5000).Draw(rt, label)) * time.Millisecond
		}
		var a Arrival
		perPeriod := 2
		if rapid.Bool().Draw(rt, "steps") {
			for i := range rapid.IntRange(1, 5).Draw(rt, "steps") {
				a.Steps = append(a.Steps, Step{For: ms(fmt.Sprintf("for%d", i), 1), Rate: 1})
			}
			perPeriod = len(a.Steps)
		} else {
			every := ms("every", 0)
			a.Spike = &Spike{Base: 1, Peak: 2, At: ms("at", 0), For: min(ms("for", 1), max(every, time.Millisecond)), Every: every}
			if a.Spike.Every > 0 && a.Spike.For > a.Spike.Every {
				a.Spike.For = a.Spike.Every
			}
		}
		span := ms("span", 1) * 10
		n, segs := a.PieceBound(span), len(a.Pieces(span))
		if n < segs || n > segs+perPeriod+1 {
			rt.Fatalf("PieceBound(%s) = %d for %d pieces of %s; want a bound within %d", span, n, segs, a.String(), perPeriod+1)
		}
	})
}

func TestAlignStart(t *testing.T) {
	base := time.Unix(1_700_000_000, 0) // a whole minute? 1_700_000_000 mod 60 = 20
	tests := []struct {
		now  time.Time
		a    Align
		want time.Time
	}{
		{base.Add(300 * time.Millisecond), Align{}, base.Add(300 * time.Millisecond)},
		{base.Add(300 * time.Millisecond), Align{Every: time.Second}, base.Add(time.Second)},
		{base, Align{Every: time.Second}, base},
		{base, Align{Every: time.Minute, Offset: 55 * time.Second}, base.Add(35 * time.Second)},
		{base.Add(36 * time.Second), Align{Every: time.Minute, Offset: 55 * time.Second}, base.Add(95 * time.Second)},
	}
	for _, tt := range tests {
		if got := tt.a.Start(tt.now); !got.Equal(tt.want) {
			t.Errorf("%+v.Start(%s) = %s; want %s", tt.a, tt.now.UTC(), got.UTC(), tt.want.UTC())
		}
	}
}

// TestJSONRoundTrip: every form is written in result.json's units and read back equal, and a
// replayed trace read back keeps its recorded size, so it is written and described again as it
// was (its rows are not in result.json).
func TestJSONRoundTrip(t *testing.T) {
	tr, err := trace.Parse("t.csv", trace.CSV, strings.NewReader("offset,client,subject,cost\n0s,a,u1,1\n250ms,b,u2,2\n1500ms,a,u1,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	ms := time.Millisecond
	tests := []struct {
		name  string
		a     Arrival
		json  string
		words string
	}{
		{"constant aligned", Arrival{Rate: 1500.5, Align: Align{Every: time.Second, Offset: 900 * ms}},
			`{"kind":"rate","rate":1500.5,"align":{"every_s":1,"offset_s":0.9}}`, "constant 1500.5/s, aligned to 1s+900ms"},
		{"ramp", Arrival{Ramp: &Ramp{From: 0, To: 900}}, `{"kind":"ramp","ramp":{"from":0,"to":900}}`, "ramp 0/s to 900/s"},
		{"steps", Arrival{Steps: []Step{{For: time.Second, Rate: 100}, {For: 500 * ms, Rate: 0}}},
			`{"kind":"steps","steps":[{"for_s":1,"rate":100},{"for_s":0.5,"rate":0}]}`, "steps 100/s for 1s, 0/s for 500ms"},
		{"spike", Arrival{Spike: &Spike{Base: 50, Peak: 2000, At: 1900 * ms, For: 200 * ms, Every: 2 * time.Second}},
			`{"kind":"spike","spike":{"base":50,"peak":2000,"at_s":1.9,"for_s":0.2,"every_s":2}}`, "spike 50/s, 2000/s at 1.9s for 200ms every 2s"},
		{"trace", Arrival{Trace: tr, TraceFile: "traces/t.csv"},
			`{"kind":"trace","trace":{"file":"traces/t.csv","rows":3,"clients":2,"subjects":2,"span_s":1.5}}`, "trace traces/t.csv (3 requests over 1.5s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.a)
			if err != nil || string(b) != tt.json {
				t.Fatalf("Marshal = %s, %v; want %s", b, err, tt.json)
			}
			var back Arrival
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Kind() != tt.a.Kind() || back.String() != tt.words || tt.a.String() != tt.words {
				t.Errorf("read back: %s %q (written as %q); want %s %q", back.Kind(), back.String(), tt.a.String(), tt.a.Kind(), tt.words)
			}
			again, err := json.Marshal(back)
			if err != nil || string(again) != tt.json {
				t.Errorf("written again = %s, %v; want %s", again, err, tt.json)
			}
		})
	}
}
