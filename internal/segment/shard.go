package segment

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/judge"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/verify"
)

// Shard is one shard of a sharded merge: shard Index of Count (0 <= Index < Count). A merge
// of shard I verifies only the scopes whose name's hash falls in it (Holds), so that K merges,
// one per shard, split the verification of a large run between them, and Join joins their
// results into the one merged result. Shard{0, 1} holds every scope.
type Shard struct {
	Index, Count int
}

// ParseShard parses "I/K" (0 <= I < K) into a Shard.
func ParseShard(s string) (Shard, error) {
	i, k, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(strings.TrimSpace(i))
	count, err2 := strconv.Atoi(strings.TrimSpace(k))
	switch {
	case !ok || err1 != nil || err2 != nil:
		return Shard{}, fmt.Errorf("shard %q: want I/K with whole numbers, such as 0/4", s)
	case count < 1 || index < 0 || index >= count:
		return Shard{}, fmt.Errorf("shard %q: want 0 <= I < K", s)
	}
	return Shard{Index: index, Count: count}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// Holds reports whether the scope named name is s's: FNV-1a (64 bits) of the name, modulo
// Count, is Index. The hash depends on the name only, so every shard agrees, on any machine.
func (s Shard) Holds(name string) bool {
	if s.Count <= 1 {
		return true
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(name)) // never fails
	return h.Sum64()%uint64(s.Count) == uint64(s.Index)
}

// splitBy returns how a sharded merge splits the verification of contract c (see
// result.Shard): by subject when every limit counts per subject (or per subject and client),
// by client when every limit counts per client across subjects, else whole (by shard 0).
func splitBy(c algorithms.Contract) string {
	var scopes []algorithms.Scope
	var walk func(c algorithms.Contract)
	walk = func(c algorithms.Contract) {
		if c.Kind != algorithms.NoContract {
			scopes = append(scopes, c.Scope)
		}
		for _, a := range c.Also {
			walk(a)
		}
	}
	walk(c)
	consumer := slices.Contains(scopes, algorithms.PerConsumer)
	other := slices.ContainsFunc(scopes, func(s algorithms.Scope) bool { return s != algorithms.PerConsumer })
	switch {
	case consumer && other:
		return result.ShardWhole
	case consumer:
		return result.ShardByClient
	}
	return result.ShardBySubject
}

// keep returns which events shard s verifies of an entry split as by says (splitBy), whose
// subjects and clients have the given names; nil when it verifies every event.
func (s Shard) keep(by string, subjects, clients []string) func(e verify.Event) bool {
	if s.Count <= 1 {
		return nil
	}
	hold := func(names []string) []bool {
		out := make([]bool, len(names))
		for i, n := range names {
			out[i] = s.Holds(n)
		}
		return out
	}
	switch by {
	case result.ShardByClient:
		h := hold(clients)
		return func(e verify.Event) bool { return int(e.Client) < len(h) && h[e.Client] }
	case result.ShardWhole:
		whole := s.Index == 0
		return func(verify.Event) bool { return whole }
	}
	h := hold(subjects)
	return func(e verify.Event) bool { return int(e.Subject) < len(h) && h[e.Subject] }
}

// ErrNotOneMerge means the results given to Join are not the shards of one merge: a result
// that is not a shard's, shards of different merges or counts, a shard given twice or missing.
var ErrNotOneMerge = errors.New("the results are not the shards of one merge")

// Join joins the results of a sharded merge, every shard once (each as `limitbench merge
// --shard I/K` wrote it), into the merged result that an unsharded merge gives: the figures
// that do not depend on the shard (latency, timeline, counts, generators) are shard 0's, the
// same in every shard; each entry's verification is verify.JoinSummaries of the shards'
// (counts add up, the worst excess is the largest, a definite violation in any shard is
// definite), its accuracy verify.JoinAccuracy of theirs, and its timeline's limit line the sum
// of theirs (each counts its own scopes); an entry verified whole (result.ShardWhole) is shard
// 0's. The sections that need the whole history (the violation explorer, fairness, the window
// use) are left out, and each entry says so. The joined result is judged against the scenario's
// expectations and thresholds: failures lists what makes it fail (empty: it passed). Errors
// wrap ErrNotOneMerge, naming the directories concerned.
func Join(shards []Part) (res *result.Result, failures []string, err error) {
	if err := checkOneMerge(shards); err != nil {
		return nil, nil, err
	}
	slices.SortFunc(shards, func(a, b Part) int { return a.Result.Shard.Index - b.Result.Shard.Index })
	joined := *shards[0].Result
	res = &joined
	res.Shard, res.JoinedShards = nil, len(shards)
	res.Entries = slices.Clone(res.Entries)
	for i := range res.Entries {
		e := &res.Entries[i]
		by := e.Shard
		e.Shard = ""
		if by != result.ShardWhole {
			var vs []verify.Summary
			var as []verify.AccuracySummary
			limit := slices.Clone(e.Timeline.Limit)
			for _, p := range shards[1:] {
				o := &p.Result.Entries[i]
				for b := range min(len(limit), len(o.Timeline.Limit)) {
					limit[b] = result.Round3(limit[b] + o.Timeline.Limit[b])
				}
			}
			for _, p := range shards {
				vs = append(vs, p.Result.Entries[i].Verification)
				as = append(as, p.Result.Entries[i].Accuracy)
			}
			e.Verification, e.Accuracy, e.Timeline.Limit = verify.JoinSummaries(vs), verify.JoinAccuracy(as), limit
		}
		e.Excerpt, e.Fairness, e.Timeline.Use = nil, nil, nil
		e.Warnings = append(slices.Clone(e.Warnings), result.Warning{Kind: result.WarningHistoryLeftOut, Message: fmt.Sprintf(
			"joined from %d shards of a sharded merge, each of which verified part of the history, so the violation explorer, fairness and the window use were left out",
			len(shards))})
	}
	st := res.Scenario.Settings
	if st == nil {
		return nil, nil, fmt.Errorf("%w: %s: the result has no scenario settings", ErrNotOneMerge, shards[0].Dir)
	}
	s, err := judgeScenario(st)
	if err != nil {
		return nil, nil, err
	}
	return res, judge.Run(s, res), nil
}

// checkOneMerge returns an error wrapping ErrNotOneMerge that names every problem at once, or
// nil when shards are every shard of one merge, each once.
func checkOneMerge(shards []Part) error {
	if len(shards) == 0 {
		return fmt.Errorf("%w: no results given", ErrNotOneMerge)
	}
	var problems []string
	var ref *result.Result
	var refDir string
	seen := map[int][]string{}
	for _, p := range shards {
		r := p.Result
		if r.Shard == nil {
			problems = append(problems, fmt.Sprintf("%s is not a shard's result (merge with --shard I/K)", p.Dir))
			continue
		}
		if ref == nil {
			ref, refDir = r, p.Dir
		}
		switch {
		case r.Shard.Count != ref.Shard.Count:
			problems = append(problems, fmt.Sprintf("%s is one of %d shards, %s one of %d", p.Dir, r.Shard.Count, refDir, ref.Shard.Count))
		case r.Shard.Hash != ref.Shard.Hash:
			problems = append(problems, fmt.Sprintf("%s hashed with %q, %s with %q", p.Dir, r.Shard.Hash, refDir, ref.Shard.Hash))
		case result.ScenarioHash(r.Scenario) != result.ScenarioHash(ref.Scenario) || !slices.Equal(r.Generators, ref.Generators) ||
			!slices.Equal(r.MissingSegments, ref.MissingSegments) || !slices.Equal(entryNames(r), entryNames(ref)):
			problems = append(problems, fmt.Sprintf("%s is a shard of another merge than %s (other segments, scenario or algorithms)", p.Dir, refDir))
		}
		seen[r.Shard.Index] = append(seen[r.Shard.Index], p.Dir)
	}
	if ref != nil && len(problems) == 0 {
		for i := range ref.Shard.Count {
			switch dirs := seen[i]; {
			case len(dirs) == 0:
				problems = append(problems, fmt.Sprintf("shard %d/%d is missing", i, ref.Shard.Count))
			case len(dirs) > 1:
				problems = append(problems, fmt.Sprintf("shard %d/%d is given twice: %s", i, ref.Shard.Count, strings.Join(dirs, " and ")))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w:\n  %s", ErrNotOneMerge, strings.Join(problems, "\n  "))
	}
	return nil
}
