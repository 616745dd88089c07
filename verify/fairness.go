package verify

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"github.com/limitbench/limitbench/algorithms"
)

// MaxFairnessClients is the most clients a Fairness lists one by one; the others are counted.
const MaxFairnessClients = 100

// Fairness is how limits shared by several clients divided their admissions among them:
// result.json's entry "fairness". It is computed over the subjects that more than one client
// sent requests to, from the admitted and denied requests (unknown and failed ones are left
// out), in permits.
//
// A client's fair share of one subject is its max-min fair allocation of what that subject
// admitted: the admitted permits divided equally among the clients that asked, no client
// getting more than it asked for, what it leaves divided among the others (water-filling).
// Jain's fairness index of one subject is (Σ x_i)² / (n · Σ x_i²) over its n clients, with
// x_i = admitted_i / fair_i: 1 when every client got its fair share, 1/n when one client took
// everything (Jain, Chiu and Hawe, 1984, normalised by the fair allocation as they propose).
type Fairness struct {
	// Subjects counts the shared subjects the figures are over.
	Subjects int `json:"subjects"`
	// Clients holds each client's figures over the shared subjects, in the log's order of
	// clients: at most MaxFairnessClients of them, the rest counted in ClientsOmitted.
	Clients        []ClientShare `json:"clients"`
	ClientsOmitted int           `json:"clients_omitted,omitempty"`
	// Jain is the mean of the shared subjects' Jain's indices, weighted by their admitted permits;
	// JainMin is the lowest of them and JainMinSubject its subject.
	Jain           float64 `json:"jain"`
	JainMin        float64 `json:"jain_min"`
	JainMinSubject string  `json:"jain_min_subject"`
	// Starved is the longest run of denials, one after the other, of a client on a subject where
	// it got less than its fair share by at least one permit; nil when no such client was denied.
	Starved *Starvation `json:"starved,omitempty"`
}

// ClientShare is one client's part of the admissions of the shared subjects.
type ClientShare struct {
	Client string `json:"client"`
	// Offered and Admitted are its requested and admitted permits (admitted and denied requests).
	Offered  int64 `json:"offered"`
	Admitted int64 `json:"admitted"`
	// Share is Admitted over all admitted permits; Fair is its fair share over the same (see
	// Fairness), both fractions rounded to three decimals.
	Share float64 `json:"share"`
	Fair  float64 `json:"fair"`
}

// Starvation is a run of denials of one client on one subject, one after the other (in the order
// of their decision times; requests with an unknown outcome or an error in between neither count
// nor break it).
type Starvation struct {
	Client  string `json:"client"`
	Subject string `json:"subject"`
	// Denials is the length of the run; FromS and ToS the decision times of its first and last
	// denial, seconds from the start of the measured part.
	Denials int64   `json:"denials"`
	FromS   float64 `json:"from_s"`
	ToS     float64 `json:"to_s"`
}

// pairStat is one (subject, client) pair's permits.
type pairStat struct {
	subject  uint32
	client   uint16
	offered  int64
	admitted int64
	fair     float64
}

// NewFairness returns the fairness of log's shared subjects, or nil when c does not count
// admissions per subject (a limit per subject and client, or per client, is never shared; no
// contract has no limit) or no subject was asked by more than one client. start is where the
// measured part starts on the log's clock, µs since the Unix epoch. log is not changed.
func NewFairness(c algorithms.Contract, log *Log, start int64) *Fairness {
	if log == nil || c.Kind == algorithms.NoContract || c.Scope != algorithms.PerSubject {
		return nil
	}
	pairs := map[uint64]*pairStat{}
	for _, e := range log.Events {
		k := e.Kind()
		if k != Admitted && k != Denied {
			continue
		}
		key := uint64(e.Subject)<<16 | uint64(e.Client)
		p := pairs[key]
		if p == nil {
			p = &pairStat{subject: e.Subject, client: e.Client}
			pairs[key] = p
		}
		p.offered += int64(e.Permits)
		if k == Admitted {
			p.admitted += int64(e.Permits)
		}
	}
	bySubject := map[uint32][]*pairStat{}
	for _, p := range pairs {
		bySubject[p.subject] = append(bySubject[p.subject], p)
	}
	f := &Fairness{JainMin: 1}
	var weighted, total float64
	under := map[uint64]bool{}
	for _, s := range slices.Sorted(maps.Keys(bySubject)) {
		ps := bySubject[s]
		if len(ps) < 2 {
			continue
		}
		f.Subjects++
		admitted := fairShares(ps)
		for _, p := range ps {
			if float64(p.admitted)+1 <= p.fair {
				under[uint64(p.subject)<<16|uint64(p.client)] = true
			}
		}
		if admitted == 0 {
			continue
		}
		j := jain(ps)
		weighted += j * float64(admitted)
		total += float64(admitted)
		if j < f.JainMin {
			f.JainMin, f.JainMinSubject = j, log.Subjects[s]
		}
	}
	if f.Subjects == 0 {
		return nil
	}
	if total > 0 {
		f.Jain = round3(weighted / total)
	}
	f.JainMin = round3(f.JainMin)
	f.Clients, f.ClientsOmitted = clientShares(log, bySubject, total)
	f.Starved = longestStarvation(log, under, start)
	return f
}

// fairShares sets the max-min fair share of each pair of one subject (see Fairness) and returns
// the subject's admitted permits.
func fairShares(ps []*pairStat) int64 {
	var admitted int64
	for _, p := range ps {
		admitted += p.admitted
	}
	sorted := slices.SortedFunc(slices.Values(ps), func(a, b *pairStat) int { return cmp.Compare(a.offered, b.offered) })
	left := float64(admitted)
	for i, p := range sorted {
		share := left / float64(len(sorted)-i)
		p.fair = math.Min(float64(p.offered), share)
		left -= p.fair
	}
	return admitted
}

// jain is Jain's index of one subject's pairs, x_i = admitted_i / fair_i over the pairs with a
// fair share (see Fairness).
func jain(ps []*pairStat) float64 {
	var sum, sq float64
	n := 0
	for _, p := range ps {
		if p.fair <= 0 {
			continue
		}
		x := float64(p.admitted) / p.fair
		sum += x
		sq += x * x
		n++
	}
	if n == 0 || sq == 0 {
		return 1
	}
	return sum * sum / (float64(n) * sq)
}

// clientShares sums each client's figures over the shared subjects, whose admitted permits are
// total.
func clientShares(log *Log, bySubject map[uint32][]*pairStat, total float64) ([]ClientShare, int) {
	byClient := make([]ClientShare, len(log.Clients))
	fair := make([]float64, len(log.Clients))
	seen := make([]bool, len(log.Clients))
	for _, ps := range bySubject {
		if len(ps) < 2 {
			continue
		}
		for _, p := range ps {
			c := &byClient[p.client]
			c.Offered += p.offered
			c.Admitted += p.admitted
			fair[p.client] += p.fair
			seen[p.client] = true
		}
	}
	var out []ClientShare
	omitted := 0
	for i, c := range byClient {
		if !seen[i] {
			continue
		}
		if len(out) == MaxFairnessClients {
			omitted++
			continue
		}
		c.Client = log.Clients[i]
		if total > 0 {
			c.Share, c.Fair = round3(float64(c.Admitted)/total), round3(fair[i]/total)
		}
		out = append(out, c)
	}
	return out, omitted
}

// longestStarvation returns the longest run of denials of the pairs in under (subject<<16 |
// client), in the order of their decision times' midpoints; the earlier run among equally long
// ones.
func longestStarvation(log *Log, under map[uint64]bool, start int64) *Starvation {
	if len(under) == 0 {
		return nil
	}
	byPair := map[uint64][]Event{}
	for _, e := range log.Events {
		key := uint64(e.Subject)<<16 | uint64(e.Client)
		if under[key] && (e.Kind() == Admitted || e.Kind() == Denied) {
			byPair[key] = append(byPair[key], e)
		}
	}
	var best *Starvation
	var bestFrom int64
	for _, key := range slices.Sorted(maps.Keys(byPair)) {
		ev := byPair[key]
		slices.SortFunc(ev, func(a, b Event) int { return cmp.Compare(mid(&a), mid(&b)) })
		var n int64
		var from int64
		for i := range ev {
			if ev[i].Kind() == Admitted {
				n = 0
				continue
			}
			if n == 0 {
				from = mid(&ev[i])
			}
			n++
			if best == nil || n > best.Denials || (n == best.Denials && from < bestFrom) {
				bestFrom = from
				best = &Starvation{Client: log.Clients[ev[i].Client], Subject: log.Subjects[ev[i].Subject], Denials: n,
					FromS: round3(float64(log.Base+from-start) / 1e6), ToS: round3(float64(log.Base+mid(&ev[i])-start) / 1e6)}
			}
		}
	}
	return best
}
