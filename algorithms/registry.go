package algorithms

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

var (
	registryMu sync.Mutex
	registry   = map[string]Algorithm{}
)

// register adds a built-in algorithm; each algorithm file calls it from init.
func register(a Algorithm) {
	registryMu.Lock()
	defer registryMu.Unlock()
	name := a.Describe().Name
	if _, dup := registry[name]; dup {
		panic("algorithms: duplicate algorithm " + name)
	}
	registry[name] = a
}

// All returns every built-in algorithm, sorted by name.
func All() []Algorithm {
	registryMu.Lock()
	defer registryMu.Unlock()
	out := make([]Algorithm, 0, len(registry))
	for _, a := range registry {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Describe().Name < out[j].Describe().Name })
	return out
}

// Names returns the names of every built-in algorithm, sorted.
func Names() []string {
	all := All()
	names := make([]string, len(all))
	for i, a := range all {
		names[i] = a.Describe().Name
	}
	return names
}

// Lookup returns the built-in algorithm called name. An unknown name gives an error wrapping
// ErrUnknownAlgorithm that suggests the closest name.
func Lookup(name string) (Algorithm, error) {
	registryMu.Lock()
	a, ok := registry[name]
	registryMu.Unlock()
	if ok {
		return a, nil
	}
	if s := Suggest(name, Names()); s != "" {
		return nil, fmt.Errorf("%w %q (did you mean %q?)", ErrUnknownAlgorithm, name, s)
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownAlgorithm, name, strings.Join(Names(), ", "))
}

// Suggest returns the candidate closest to s by edit distance, or "" when none is close (distance
// more than a third of the longer string, plus one).
func Suggest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		d := editDistance(s, c)
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	n := max(len(s), len(best))
	if bestD < 0 || bestD > n/3+1 {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
