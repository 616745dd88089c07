package verify

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/load"
)

// TestStreamLogMatchesAdmissionLogOnRedis (issue 30): real runs against a redis-server, each
// recorded by an AdmissionLog (the whole history, checked at the end) and a StreamLog (checked
// as it comes) side by side in one load.Run, give the same verification, accuracy and bin
// limits: for a sliding window, a fixed window, a token bucket and a published token bucket
// whose skewed clients over-admit, over some 13,000 requests each with a warmup. With a horizon
// of 200 ms the stream checks as the run goes (no request on loopback takes that long: none is
// late). The StreamLog's record decodes to the AdmissionLog's events. Its live count of definite
// violations (DefiniteSoFar), read when the load ends, is some when the verdict has some, and
// never more than it.
func TestStreamLogMatchesAdmissionLogOnRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end")
	}
	limit := algorithms.Limit{Limit: 40, Window: 500 * time.Millisecond}
	const subjects, clients = 4, 16
	rate := 8 * limit.RatePerSecond() * subjects
	skewed := load.Skew{Offsets: []time.Duration{-2 * time.Second, 2 * time.Second}}
	for _, tt := range []struct {
		algorithm string
		skew      load.Skew
	}{
		{"sliding-log", load.Skew{}},
		{"fixed-window", load.Skew{}},
		{"gcra", skewed},
		{"token-bucket-published", skewed},
	} {
		t.Run(tt.algorithm, func(t *testing.T) {
			alg, lim, contract, env := onRedis(t, tt.algorithm, limit)
			ctx := context.Background()
			plan := load.Plan{Arrival: load.Constant(rate), Warmup: 500 * time.Millisecond, Duration: 5 * time.Second,
				Clients: clients, Keys: load.Keys{Count: subjects}, Skew: tt.skew, Seed: 5}
			names := make([]string, clients)
			for i := range names {
				names[i] = fmt.Sprintf("c%d", i)
			}
			shared := env.Target.Info.SharedClock
			adm, warm := NewAdmissionLog(time.Time{}, shared, nil, false), NewAdmissionLog(time.Time{}, shared, nil, false)
			bin := 100 * time.Millisecond
			sl := NewStreamLog(time.Time{}, shared, nil, false, StreamLogSettings{
				Measurement: Measurement{Contract: contract, Model: alg.Model(limit), Fresh: true},
				Warmup:      plan.Warmup, Subjects: plan.Keys.Names(), Clients: names,
				Stream: StreamSettings{BinWidths: []time.Duration{bin}, SpillDir: t.TempDir()}, Record: true,
				Horizon: 200 * time.Millisecond,
			})
			defer sl.Close()
			res, err := load.Run(ctx, newClient(env, clients), lim, plan, load.Sinks{
				Measured: []load.Aggregator{adm, sl}, Warmup: []load.Aggregator{warm, sl.Warmup()}})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Counts.Dropped != 0 {
				t.Fatalf("%d outcomes dropped or late", res.Counts.Dropped)
			}
			w := Warnings{Behind: res.Behind, ClockMismatch: res.Counts.ClockMismatch}
			m := Measurement{Contract: contract, Model: alg.Model(limit), Fresh: true, Warnings: w,
				Log: adm.Log(res.Subjects, res.Clients), Warmup: warm.Log(res.Subjects, res.Clients), Start: adm.Micros(plan.Warmup)}
			nEvents := len(m.Log.Events)
			wantB := m.BinLimits(bin, 50)
			m.Log = adm.Log(res.Subjects, res.Clients)
			wantV, wantA := m.Sections()
			soFar := sl.DefiniteSoFar() // the live figure, before the stream is finished
			gotV, gotA := sl.Sections(w)
			if soFar > gotV.DefiniteViolations || (gotV.DefiniteViolations > 0) != (soFar > 0) {
				t.Errorf("DefiniteSoFar after the load = %d; want at most the final %d, and some when there are some (the load ran %s past the horizon)",
					soFar, gotV.DefiniteViolations, plan.Duration)
			}
			t.Logf("%d events: %s, %d definite, %d possible, efficiency %.3f", nEvents, gotV.Verdict, gotV.DefiniteViolations,
				gotV.PossibleViolations, gotA.Efficiency)
			if d := cmp.Diff(wantV, gotV); d != "" {
				t.Errorf("verification (-AdmissionLog +StreamLog):\n%s", d)
			}
			if d := cmp.Diff(wantA, gotA); d != "" {
				t.Errorf("accuracy (-AdmissionLog +StreamLog):\n%s", d)
			}
			if d := cmp.Diff(wantB, sl.BinLimits(bin, 50)); d != "" {
				t.Errorf("bin limits (-AdmissionLog +StreamLog):\n%s", d)
			}
			if tt.algorithm == "token-bucket-published" && gotV.DefiniteViolations == 0 {
				t.Errorf("the published token bucket with skewed clients was not flagged")
			}
			checkRecord(t, sl, adm)
		})
	}
}

// checkRecord checks that the StreamLog's encoding decodes to an AdmissionLog holding adm's
// events.
func checkRecord(t *testing.T, sl *StreamLog, adm *AdmissionLog) {
	t.Helper()
	b, err := sl.MarshalBinary()
	if err != nil {
		t.Fatalf("MarshalBinary: %v", err)
	}
	var got AdmissionLog
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatalf("UnmarshalBinary: %v", err)
	}
	a, g := adm.Events(), got.Events()
	less := func(x, y Event) int {
		if x.t != y.t {
			return cmpU64(x.t, y.t)
		}
		return int(x.Subject) - int(y.Subject)
	}
	slices.SortFunc(a, less)
	slices.SortFunc(g, less)
	if got.Origin != adm.Origin || !slices.Equal(a, g) || got.Narrowed != adm.Narrowed {
		t.Errorf("the record decodes to %d events (Origin %d, Narrowed %d); want the admission log's %d (Origin %d, Narrowed %d)",
			len(g), got.Origin, got.Narrowed, len(a), adm.Origin, adm.Narrowed)
	}
}
