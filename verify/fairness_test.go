package verify

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/limitbench/limitbench/algorithms"
)

// fairLog returns a log of subject a asked by clients c0 and c1 (and subject b by c0 alone):
// kinds[i] is what the i-th request of each client got, one request every 10 ms.
func fairLog(c0, c1 string) *Log {
	log := &Log{Subjects: []string{"a", "b"}, Clients: []string{"c0", "c1"}}
	for ci, kinds := range []string{c0, c1} {
		for i, k := range kinds {
			kind := Denied
			if k == 'a' {
				kind = Admitted
			}
			at := int64(10_000*i + 1_000*ci)
			log.Events = append(log.Events, mustEvent(at, at, 0, uint16(ci), 1, kind))
		}
	}
	log.Events = append(log.Events, mustEvent(5, 5, 1, 0, 1, Admitted), mustEvent(5, 6, 0, 1, 1, Unknown))
	return log
}

func TestFairness(t *testing.T) {
	subject := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 10, Window: time.Second}
	tests := []struct {
		name   string
		c0, c1 string
		want   *Fairness
	}{{
		// 10 admitted of 20 asked: 5 each is fair; c0 took 8, c1 2 (x = 1.6, 0.4: J = 4/5.44).
		name: "one client takes most", c0: "aaaaaaaadd", c1: "adddddaddd",
		want: &Fairness{Subjects: 1, Jain: 0.735, JainMin: 0.735, JainMinSubject: "a",
			Clients: []ClientShare{
				{Client: "c0", Offered: 10, Admitted: 8, Share: 0.8, Fair: 0.5},
				{Client: "c1", Offered: 10, Admitted: 2, Share: 0.2, Fair: 0.5},
			},
			Starved: &Starvation{Client: "c1", Subject: "a", Denials: 5, FromS: 0.011, ToS: 0.051}},
	}, {
		// c0 asked for 2 and got them; the other 8 of 10 admitted are c1's fair share: max-min
		// fair, J = 1, and nobody is under its share.
		name: "a small demand met", c0: "aa", c1: "aaaaaaaadddd",
		want: &Fairness{Subjects: 1, Jain: 1, JainMin: 1, JainMinSubject: "",
			Clients: []ClientShare{
				{Client: "c0", Offered: 2, Admitted: 2, Share: 0.2, Fair: 0.2},
				{Client: "c1", Offered: 12, Admitted: 8, Share: 0.8, Fair: 0.8},
			}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := NewFairness(subject, fairLog(tt.c0, tt.c1), 0)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("NewFairness (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFairnessNotShared: a limit per subject and client, or per client, is never shared, nor is
// a subject asked by one client alone.
func TestFairnessNotShared(t *testing.T) {
	log := fairLog("aad", "add")
	for _, sc := range []algorithms.Scope{algorithms.PerClient, algorithms.PerConsumer} {
		c := algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 10, Window: time.Second, Scope: sc}
		if f := NewFairness(c, log, 0); f != nil {
			t.Errorf("NewFairness per %s = %+v; want nil", sc, f)
		}
	}
	one := fairLog("aad", "")
	if f := NewFairness(algorithms.Contract{Kind: algorithms.SlidingWindow, Limit: 1, Window: time.Second}, one, 0); f != nil {
		t.Errorf("NewFairness with one client per subject = %+v; want nil", f)
	}
}

// TestJainBounds: one client taking everything of n gives 1/n.
func TestJainBounds(t *testing.T) {
	ps := []*pairStat{{offered: 5, admitted: 5}, {offered: 5}, {offered: 5}, {offered: 5}}
	fairShares(ps)
	if j := jain(ps); math.Abs(j-0.25) > 1e-12 {
		t.Errorf("jain = %g; want 0.25", j)
	}
}
