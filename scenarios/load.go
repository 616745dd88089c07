package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/limitbench/limitbench/algorithms"
	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/load"
	"github.com/limitbench/limitbench/internal/problem"
	"github.com/limitbench/limitbench/internal/redisenv"
)

// Load reads and validates the scenario file at path. Every problem is reported at once in an
// *Errors that matches ErrInvalid, each naming the file, line and field. Algorithm names are checked
// against the built-in algorithms registered now (algorithms.Names) and the file's custom entries.
// Custom scripts are read relative to the file's directory.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return Parse(path, data)
}

// Parse is Load for data already read; name is the file's path, used in messages, as the default
// scenario name and to find custom scripts.
func Parse(name string, data []byte) (*Scenario, error) {
	return parse(name, data, algorithms.Names())
}

// topFields are the fields of a scenario, in the order the package doc lists them.
var topFields = []string{
	"version", "name", "description", "topologies", "duration", "warmup", "seed", "clients",
	"client_mode", "pipeline_depth", "call", "speed_only", "arrival", "keys", "limit", "cost", "clock_skew", "algorithms",
	"expect", "thresholds", "persistence", "replicas", "faults", "wait_replicas", "wait_timeout", "wait_short",
}

func parse(name string, data []byte, builtins []string) (*Scenario, error) {
	d := &decoder{file: name, pos: map[string]position{}}
	s := Default()
	s.File = name
	s.pos = d.pos
	s.Name = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))

	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, errorsOf([]problem.Problem{{File: name, Msg: "empty scenario file"}})
	case err != nil:
		return nil, errorsOf([]problem.Problem{yamlProblem(name, err)})
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		p := problem.Problem{File: name, Msg: "more than one YAML document; a scenario file holds one"}
		if err == nil {
			p.Line = extra.Line
		}
		return nil, errorsOf([]problem.Problem{p})
	}
	root := doc.Content[0]
	d.scenario(root, s)
	if err := s.validate(builtins, d.probs); err != nil {
		return nil, err
	}
	return s, nil
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlProblem turns a YAML syntax error into a problem with its line.
func yamlProblem(file string, err error) problem.Problem {
	msg := err.Error()
	p := problem.Problem{File: file}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		fmt.Sscan(m[1], &p.Line)
		msg = m[2]
	}
	p.Msg = "malformed YAML: " + strings.TrimPrefix(msg, "yaml: ")
	return p
}

// decoder walks YAML nodes into a Scenario, recording where each field is and every problem.
type decoder struct {
	file  string
	probs []problem.Problem
	pos   map[string]position
}

func (d *decoder) fail(n *yaml.Node, field, format string, a ...any) {
	d.probs = append(d.probs, problem.Problem{File: d.file, Line: n.Line, Column: n.Column, Field: field,
		Msg: fmt.Sprintf(format, a...)})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// describe names what n is, for "got ..." in messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	if n.ShortTag() == "!!str" {
		return strconv.Quote(n.Value)
	}
	return n.Value
}

// mapping returns the non-null fields of the mapping n by name, recording where each is. Unknown
// and repeated keys are reported; known lists the fields n may have.
func (d *decoder) mapping(n *yaml.Node, path string, known []string) map[string]*yaml.Node {
	if n.Kind != yaml.MappingNode {
		what := ""
		if path == "" {
			what = "a scenario "
		}
		d.fail(n, path, "%smust be a mapping with fields %s; got %s", what, strings.Join(known, ", "), describe(n))
		return nil
	}
	out := map[string]*yaml.Node{}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		f := join(path, k.Value)
		switch {
		case k.Value == "<<":
			d.fail(k, path, "merge keys (<<) are not supported; write the fields out")
			continue
		case !contains(known, k.Value):
			msg := fmt.Sprintf("unknown field %q", k.Value)
			if s := algorithms.Suggest(k.Value, known); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			} else {
				msg += " (fields here: " + strings.Join(known, ", ") + ")"
			}
			d.fail(k, f, "%s", msg)
			continue
		case first[k.Value] > 0:
			d.fail(k, f, "given twice (first on line %d)", first[k.Value])
			continue
		}
		first[k.Value] = k.Line
		d.pos[f] = position{k.Line, k.Column}
		if !isNull(v) {
			out[k.Value] = v
		}
	}
	return out
}

// list returns the items of the sequence n, recording where each is.
func (d *decoder) list(n *yaml.Node, path, example string) []*yaml.Node {
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "must be a list, such as %s; got %s", example, describe(n))
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, item := range n.Content {
		d.pos[fmt.Sprintf("%s[%d]", path, i)] = position{item.Line, item.Column}
		out[i] = resolve(item)
	}
	return out
}

func (d *decoder) scalar(n *yaml.Node, path, what string) bool {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, path, "must be %s; got %s", what, describe(n))
		return false
	}
	return true
}

func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	if !d.scalar(n, path, "a string") {
		return "", false
	}
	return n.Value, true
}

func (d *decoder) int64(n *yaml.Node, path string) (int64, bool) {
	var v int64
	if !d.scalar(n, path, "a whole number") || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
		if n.Kind == yaml.ScalarNode {
			d.fail(n, path, "must be a whole number; got %s", describe(n))
		}
		return 0, false
	}
	return v, true
}

func (d *decoder) int(n *yaml.Node, path string) (int, bool) {
	v, ok := d.int64(n, path)
	return int(v), ok
}

func (d *decoder) float(n *yaml.Node, path string) (float64, bool) {
	var v float64
	tag := n.ShortTag()
	if !d.scalar(n, path, "a number") || (tag != "!!int" && tag != "!!float") || n.Decode(&v) != nil {
		if n.Kind == yaml.ScalarNode {
			d.fail(n, path, "must be a number; got %s", describe(n))
		}
		return 0, false
	}
	return v, true
}

func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	if !d.scalar(n, path, "a duration such as 500ms, 10s or 1m") {
		return 0, false
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		d.fail(n, path, "must be a duration such as 500ms, 10s or 1m; got %s", describe(n))
		return 0, false
	}
	return v, true
}

func (d *decoder) bool(n *yaml.Node, path string) (bool, bool) {
	var v bool
	if !d.scalar(n, path, "true or false") || n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
		if n.Kind == yaml.ScalarNode {
			d.fail(n, path, "must be true or false; got %s", describe(n))
		}
		return false, false
	}
	return v, true
}

func (d *decoder) strings(n *yaml.Node, path, example string) []string {
	items := d.list(n, path, example)
	if items == nil {
		return nil
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		if v, ok := d.str(it, fmt.Sprintf("%s[%d]", path, i)); ok {
			out = append(out, v)
		}
	}
	return out
}

// set decodes n with get into *dst when it decodes.
func set[T any](dst *T, n *yaml.Node, path string, get func(*yaml.Node, string) (T, bool)) {
	if n == nil {
		return
	}
	if v, ok := get(n, path); ok {
		*dst = v
	}
}

func (d *decoder) scenario(root *yaml.Node, s *Scenario) {
	m := d.mapping(root, "", topFields)
	if m == nil {
		return
	}
	set(&s.Version, m["version"], "version", d.int)
	set(&s.Name, m["name"], "name", d.str)
	set(&s.Description, m["description"], "description", d.str)
	if n := m["topologies"]; n != nil {
		s.Topologies = nil
		for _, t := range d.strings(n, "topologies", "[single, cluster]") {
			s.Topologies = append(s.Topologies, redisenv.Topology(t))
		}
	}
	set(&s.Duration, m["duration"], "duration", d.duration)
	set(&s.Warmup, m["warmup"], "warmup", d.duration)
	set(&s.Seed, m["seed"], "seed", d.int64)
	set(&s.Clients, m["clients"], "clients", d.int)
	if n := m["client_mode"]; n != nil {
		if v, ok := d.str(n, "client_mode"); ok {
			s.ClientMode = load.Mode(v)
		}
	}
	set(&s.PipelineDepth, m["pipeline_depth"], "pipeline_depth", d.int)
	if n := m["call"]; n != nil {
		if v, ok := d.str(n, "call"); ok {
			s.Call = algorithms.CallMode(v)
		}
	}
	if n := m["speed_only"]; n != nil {
		if v, ok := d.bool(n, "speed_only"); ok {
			s.SpeedOnly = v
		}
	}
	if m["pipeline_depth"] == nil && s.ClientMode == load.ModePipeline {
		s.PipelineDepth = DefaultPipelineDepth
	}
	if n := m["arrival"]; n != nil {
		s.Arrival = d.arrival(n)
		if m["duration"] == nil && s.Arrival != nil && s.Arrival.Trace != nil {
			s.Duration = TraceDuration(s.Arrival.Trace, s.Warmup)
		}
		if m["duration"] == nil && s.Arrival != nil && len(s.Arrival.Steps) > 0 {
			var sum time.Duration
			for _, st := range s.Arrival.Steps {
				sum += st.For
			}
			s.Duration = sum
		}
	}
	if n := m["keys"]; n != nil {
		d.keys(n, &s.Keys)
	}
	if n := m["limit"]; n != nil {
		km := d.mapping(n, "limit", []string{"limit", "window", "burst", "consumer_limit"})
		set(&s.Limit.Limit, km["limit"], "limit.limit", d.int64)
		set(&s.Limit.Window, km["window"], "limit.window", d.duration)
		set(&s.Limit.Burst, km["burst"], "limit.burst", d.int64)
		set(&s.Limit.ConsumerLimit, km["consumer_limit"], "limit.consumer_limit", d.int64)
	}
	set(&s.Cost, m["cost"], "cost", d.int64)
	if n := m["clock_skew"]; n != nil {
		d.clockSkew(n, &s.ClockSkew)
	}
	if n := m["algorithms"]; n != nil {
		s.Algorithms = d.algorithms(n)
	}
	if n := m["expect"]; n != nil {
		em := d.mapping(n, "expect", []string{"violations", "may_violate"})
		if v := em["violations"]; v != nil {
			s.Expect.Violations = d.strings(v, "expect.violations", "[token-bucket-published]")
		}
		if v := em["may_violate"]; v != nil {
			s.Expect.MayViolate = d.strings(v, "expect.may_violate", "[sliding-log-published]")
		}
	}
	if n := m["persistence"]; n != nil {
		if v, ok := d.str(n, "persistence"); ok {
			s.Persistence = redisenv.Persistence(v)
		}
	}
	set(&s.Replicas, m["replicas"], "replicas", d.int)
	if n := m["faults"]; n != nil {
		s.Faults = d.faults(n)
	}
	set(&s.Wait.Replicas, m["wait_replicas"], "wait_replicas", d.int)
	set(&s.Wait.Timeout, m["wait_timeout"], "wait_timeout", d.duration)
	if n := m["wait_short"]; n != nil {
		if v, ok := d.str(n, "wait_short"); ok {
			s.waitShort = v
			s.Wait.DenyShort = v == WaitShortDeny
		}
	}
	if n := m["thresholds"]; n != nil {
		for i, it := range d.list(n, "thresholds", `["p99 < 5ms", "gcra: efficiency > 0.95"]`) {
			f := fmt.Sprintf("thresholds[%d]", i)
			text, ok := d.str(it, f)
			if !ok {
				continue
			}
			// A threshold that does not parse is kept as text alone; validation reports it.
			t, err := ParseThreshold(text)
			if err != nil {
				t = Threshold{Text: text}
			}
			s.Thresholds = append(s.Thresholds, t)
		}
	}
}

func (d *decoder) arrival(n *yaml.Node) *arrival.Arrival {
	m := d.mapping(n, "arrival", []string{"rate", "ramp", "steps", "spike", "trace", "align"})
	if m == nil {
		return nil
	}
	a := &arrival.Arrival{}
	set(&a.Rate, m["rate"], "arrival.rate", d.float)
	if r := m["ramp"]; r != nil {
		rm := d.mapping(r, "arrival.ramp", []string{"from", "to"})
		a.Ramp = &arrival.Ramp{}
		set(&a.Ramp.From, rm["from"], "arrival.ramp.from", d.float)
		set(&a.Ramp.To, rm["to"], "arrival.ramp.to", d.float)
	}
	if st := m["steps"]; st != nil {
		for i, it := range d.list(st, "arrival.steps", "[{for: 5s, rate: 500}, {for: 5s, rate: 5000}]") {
			f := fmt.Sprintf("arrival.steps[%d]", i)
			sm := d.mapping(it, f, []string{"for", "rate"})
			var step arrival.Step
			set(&step.For, sm["for"], f+".for", d.duration)
			set(&step.Rate, sm["rate"], f+".rate", d.float)
			if sm != nil && sm["for"] == nil {
				d.fail(it, f+".for", "missing: every step needs for (its length) and rate")
			}
			if sm != nil && sm["rate"] == nil {
				d.fail(it, f+".rate", "missing: every step needs for (its length) and rate")
			}
			a.Steps = append(a.Steps, step)
		}
	}
	if sp := m["spike"]; sp != nil {
		sm := d.mapping(sp, "arrival.spike", []string{"base", "peak", "at", "for", "every"})
		a.Spike = &arrival.Spike{}
		set(&a.Spike.Base, sm["base"], "arrival.spike.base", d.float)
		set(&a.Spike.Peak, sm["peak"], "arrival.spike.peak", d.float)
		set(&a.Spike.At, sm["at"], "arrival.spike.at", d.duration)
		set(&a.Spike.For, sm["for"], "arrival.spike.for", d.duration)
		set(&a.Spike.Every, sm["every"], "arrival.spike.every", d.duration)
	}
	if tn := m["trace"]; tn != nil {
		d.trace(tn, a)
	}
	if al := m["align"]; al != nil {
		if al.Kind == yaml.MappingNode {
			am := d.mapping(al, "arrival.align", []string{"every", "offset"})
			set(&a.Align.Every, am["every"], "arrival.align.every", d.duration)
			set(&a.Align.Offset, am["offset"], "arrival.align.offset", d.duration)
		} else {
			set(&a.Align.Every, al, "arrival.align", d.duration)
		}
	}
	return a
}

func (d *decoder) keys(n *yaml.Node, k *load.Keys) {
	m := d.mapping(n, "keys", []string{"count", "distribution", "zipf_s", "hot_share"})
	set(&k.Count, m["count"], "keys.count", d.int)
	if v := m["distribution"]; v != nil {
		if s, ok := d.str(v, "keys.distribution"); ok {
			k.Distribution = load.Distribution(s)
		}
	}
	set(&k.ZipfS, m["zipf_s"], "keys.zipf_s", d.float)
	set(&k.HotShare, m["hot_share"], "keys.hot_share", d.float)
	if m["zipf_s"] == nil && k.Distribution == load.Zipf {
		k.ZipfS = DefaultZipfS
	}
	if m["hot_share"] == nil && k.Distribution == load.Hot {
		k.HotShare = DefaultHotShare
	}
}

func (d *decoder) clockSkew(n *yaml.Node, c *load.Skew) {
	if n.Kind == yaml.MappingNode {
		m := d.mapping(n, "clock_skew", []string{"spread"})
		set(&c.Spread, m["spread"], "clock_skew.spread", d.duration)
		return
	}
	for i, it := range d.list(n, "clock_skew", "[0s, 2s, -2s] or {spread: 2s}") {
		if v, ok := d.duration(it, fmt.Sprintf("clock_skew[%d]", i)); ok {
			c.Offsets = append(c.Offsets, v)
		}
	}
}

var customFields = []string{"name", "script", "library", "function", "keys", "args", "allowed", "time", "contract"}

func (d *decoder) algorithms(n *yaml.Node) []AlgorithmEntry {
	var out []AlgorithmEntry
	for i, it := range d.list(n, "algorithms", "[all] or [gcra, sliding-log]") {
		f := fmt.Sprintf("algorithms[%d]", i)
		switch it.Kind {
		case yaml.ScalarNode:
			out = append(out, AlgorithmEntry{Name: it.Value})
		case yaml.MappingNode:
			c := d.custom(it, f)
			out = append(out, AlgorithmEntry{Name: c.Name, Custom: c})
		default:
			d.fail(it, f, "must be an algorithm name or a custom script (a mapping with %s); got %s",
				strings.Join(customFields, ", "), describe(it))
		}
	}
	return out
}
