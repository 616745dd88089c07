package load

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Distribution says how requests are spread over subjects.
type Distribution string

// Distributions.
const (
	// Uniform: every subject equally likely.
	Uniform Distribution = "uniform"
	// Zipf: subject k (0-based) has probability proportional to 1/(k+1)^s, for any s >= 0
	// (s = 0 is uniform). Unlike math/rand's Zipf, s <= 1 is supported: the generator samples
	// an exact alias table over Count subjects.
	Zipf Distribution = "zipf"
	// Hot: subject 0 takes HotShare of the requests; the others share the rest uniformly.
	Hot Distribution = "hot"
)

// Keys says which subjects requests go to: a scenario's keys, and the keys of result.json's
// settings. The zero value is one subject.
type Keys struct {
	// Count is the number of subjects (default 1, at most MaxKeys).
	Count int `json:"count"`
	// Distribution is uniform (default), zipf or hot.
	Distribution Distribution `json:"distribution"`
	// ZipfS is, for zipf, the exponent s (>= 0; s = 0 is uniform).
	ZipfS float64 `json:"zipf_s,omitempty"`
	// HotShare is, for hot, the share of requests that go to subject 0, in [0, 1].
	HotShare float64 `json:"hot_share,omitempty"`
	// Prefix is put in front of each subject's index to name it (default "s": "s0", "s1", ...).
	Prefix string `json:"-"`
}

// String describes k in words: "1000 subjects, zipf s=0.99", "1 subject, uniform".
func (k Keys) String() string {
	k = k.withDefaults()
	noun := "subjects"
	if k.Count == 1 {
		noun = "subject"
	}
	switch k.Distribution {
	case Zipf:
		return fmt.Sprintf("%d %s, zipf s=%g", k.Count, noun, k.ZipfS)
	case Hot:
		return fmt.Sprintf("%d %s, hot share %g", k.Count, noun, k.HotShare)
	}
	return fmt.Sprintf("%d %s, uniform", k.Count, noun)
}

func (k Keys) withDefaults() Keys {
	if k.Count == 0 {
		k.Count = 1
	}
	if k.Distribution == "" {
		k.Distribution = Uniform
	}
	if k.Prefix == "" {
		k.Prefix = "s"
	}
	return k
}

// validate appends every problem with k to errs.
func (k Keys) validate(errs []error) []error {
	k = k.withDefaults()
	field := func(name string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrBadPlan, name, err))
		}
	}
	field("keys.count", CheckKeyCount(k.Count))
	switch k.Distribution {
	case Uniform:
	case Zipf:
		field("keys.zipf_s", CheckExponent(k.ZipfS))
	case Hot:
		field("keys.hot_share", CheckShare(k.HotShare))
	default:
		errs = append(errs, fmt.Errorf("%w: keys.distribution %q (want uniform, zipf or hot)", ErrBadPlan, k.Distribution))
	}
	return errs
}

// Names returns the subject names, Prefix followed by the index.
func (k Keys) Names() []string {
	k = k.withDefaults()
	out := make([]string, k.Count)
	for i := range out {
		out[i] = k.Prefix + strconv.Itoa(i)
	}
	return out
}

// Picker chooses the subject of each tick: a pure function of (seed, tick), so the same plan
// picks the same sequence every time, whatever goroutine sends which tick. Safe for concurrent
// use.
type Picker struct {
	dist  Distribution
	n     uint64
	share uint64   // hot: threshold on 64 random bits
	prob  []uint32 // zipf alias table: keep column i when the coin < prob[i]
	alias []uint32 // zipf alias table: else take alias[i]
	seed  uint64
}

// NewPicker builds the Picker for k (which must be valid) and seed. For zipf it builds an alias
// table in O(Count).
func NewPicker(k Keys, seed uint64) *Picker {
	k = k.withDefaults()
	p := &Picker{dist: k.Distribution, n: uint64(k.Count), seed: seed}
	switch k.Distribution {
	case Hot:
		p.share = shareThreshold(k.HotShare)
	case Zipf:
		w := make([]float64, k.Count)
		for i := range w {
			w[i] = math.Pow(float64(i+1), -k.ZipfS)
		}
		p.prob, p.alias = aliasTable(w)
	}
	return p
}

func shareThreshold(share float64) uint64 {
	if share >= 1 {
		return math.MaxUint64
	}
	return uint64(share * (1 << 64))
}

// Pick returns the subject index of tick n.
func (p *Picker) Pick(n uint64) uint32 {
	x := mix64(p.seed ^ mix64(n))
	switch p.dist {
	case Hot:
		if x < p.share || p.n == 1 {
			return 0
		}
		hi, _ := bits.Mul64(mix64(x), p.n-1)
		return uint32(1 + hi)
	case Zipf:
		i, _ := bits.Mul64(x, p.n)
		if uint32(mix64(x)) < p.prob[i] {
			return uint32(i)
		}
		return p.alias[i]
	}
	hi, _ := bits.Mul64(x, p.n)
	return uint32(hi)
}

// mix64 is the SplitMix64 finaliser: a bijection of uint64 whose outputs pass as independent
// uniform bits for consecutive inputs.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// aliasTable builds Vose's alias table for weights w: column i is kept with probability
// prob[i]/2^32, else alias[i] is taken. Each outcome then has probability w[i]/Σw up to 2^-32.
func aliasTable(w []float64) (prob, alias []uint32) {
	n := len(w)
	var sum float64
	for _, x := range w {
		sum += x
	}
	scaled := make([]float64, n)
	small := make([]int, 0, n)
	large := make([]int, 0, n)
	for i, x := range w {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	prob = make([]uint32, n)
	alias = make([]uint32, n)
	for len(small) > 0 && len(large) > 0 {
		s := small[len(small)-1]
		small = small[:len(small)-1]
		l := large[len(large)-1]
		prob[s] = uint32(scaled[s] * (1 << 32))
		alias[s] = uint32(l)
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What is left has probability 1 up to rounding: always keep it.
	for _, i := range append(small, large...) {
		prob[i] = math.MaxUint32
		alias[i] = uint32(i)
	}
	return prob, alias
}

// Skew gives each client a clock offset, added to the time handed to client-clock algorithms
// (Request.ClientTime); server-clock algorithms are unaffected. It is a scenario's clock_skew and
// result.json's settings.clock_skew ({"offsets_s": [...], "spread_s": s}, seconds). Set at most
// one of Offsets and Spread; the zero value (or offsets that are all 0) is no skew.
type Skew struct {
	// Offsets, when set, are cycled over clients: client c gets Offsets[c mod len(Offsets)].
	Offsets []time.Duration
	// Spread, when Offsets is empty, spreads clients evenly over [−Spread, +Spread]: client c
	// of n gets −Spread + 2·Spread·c/(n−1) (a single client gets −Spread).
	Spread time.Duration
}

// IsZero reports whether no client is skewed.
func (s Skew) IsZero() bool {
	for _, o := range s.Offsets {
		if o != 0 {
			return false
		}
	}
	return s.Spread == 0
}

// String describes s in words: "spread ±2s", "offsets 0s, 2s, -2s cycled over clients", or ""
// for no skew.
func (s Skew) String() string {
	switch {
	case s.IsZero():
		return ""
	case s.Spread > 0:
		return "spread ±" + s.Spread.String()
	}
	parts := make([]string, len(s.Offsets))
	for i, d := range s.Offsets {
		parts[i] = d.String()
	}
	return "offsets " + strings.Join(parts, ", ") + " cycled over clients"
}

// skewJSON is Skew's form in result.json: durations in seconds.
type skewJSON struct {
	OffsetsS []float64 `json:"offsets_s,omitempty"`
	SpreadS  float64   `json:"spread_s,omitempty"`
}

// MarshalJSON writes s with its durations in seconds.
func (s Skew) MarshalJSON() ([]byte, error) {
	w := skewJSON{SpreadS: s.Spread.Seconds()}
	for _, d := range s.Offsets {
		w.OffsetsS = append(w.OffsetsS, d.Seconds())
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Skew) UnmarshalJSON(b []byte) error {
	var w skewJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = Skew{Spread: Seconds(w.SpreadS)}
	for _, x := range w.OffsetsS {
		s.Offsets = append(s.Offsets, Seconds(x))
	}
	return nil
}

// Seconds returns x seconds as a Duration, rounded to the nanosecond: the inverse of
// Duration.Seconds for the durations result.json holds in seconds.
func Seconds(x float64) time.Duration { return time.Duration(math.Round(x * float64(time.Second))) }

// Offset returns the clock offset of client c out of clients.
func (s Skew) Offset(c, clients int) time.Duration {
	if len(s.Offsets) > 0 {
		return s.Offsets[c%len(s.Offsets)]
	}
	if s.Spread == 0 {
		return 0
	}
	if clients <= 1 {
		return -s.Spread
	}
	return -s.Spread + time.Duration(float64(2*s.Spread)*float64(c)/float64(clients-1))
}
