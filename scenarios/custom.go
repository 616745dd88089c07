package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/limitbench/limitbench/algorithms"
)

// This file reads and checks the entry of a custom algorithm (algorithms: with a script: or a
// library: and function:): its decoding from YAML (decoder.custom, decoder.allowed) and its
// validation (checker.custom, checker.contract).

func (d *decoder) custom(n *yaml.Node, f string) *algorithms.CustomSpec {
	c := &algorithms.CustomSpec{}
	m := d.mapping(n, f, customFields)
	set(&c.Name, m["name"], f+".name", d.str)
	// library: and function: name a Redis function library and the function each request calls,
	// in place of script:. The library's file is read as a script's is.
	field, sn := "script", m["script"]
	if ln := m["library"]; ln != nil {
		if sn != nil {
			d.fail(ln, f+".library", "script: and library: both given; a custom algorithm is a script (EVALSHA) or a function of a library (FCALL), not both")
		}
		field, sn = "library", ln
		if fn := m["function"]; fn == nil {
			d.fail(ln, f+".function", "a function library needs function: the name of the function each request calls (FCALL)")
		}
	}
	if fn := m["function"]; fn != nil {
		if s, ok := d.str(fn, f+".function"); ok {
			c.Function = s
			if m["library"] == nil {
				d.fail(fn, f+".function", "function: needs library: the Lua file of the function library that registers it")
			} else if s == "" {
				d.fail(fn, f+".function", "function: must name a function of the library")
			}
		}
	}
	if sn != nil {
		if p, ok := d.str(sn, f+"."+field); ok {
			c.Script = p
			c.Path = p
			if !filepath.IsAbs(p) {
				c.Path = filepath.Join(filepath.Dir(d.file), p)
			}
			src, err := os.ReadFile(c.Path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				d.fail(sn, f+"."+field, field+" file %s not found (the path is relative to the scenario file)", c.Path)
			case err != nil:
				d.fail(sn, f+"."+field, "cannot read %s: %v", field, err)
			case len(bytes.TrimSpace(src)) == 0:
				d.fail(sn, f+"."+field, field+" file %s is empty", c.Path)
			default:
				c.Source = string(src)
			}
		}
	}
	if v := m["keys"]; v != nil {
		c.Keys = d.strings(v, f+".keys", `["rl:{{tag}}:tokens"]`)
	}
	if v := m["args"]; v != nil {
		c.Args = d.strings(v, f+".args", `["{{limit}}", "{{window_ms}}", "{{now_ms}}"]`)
	}
	if v := m["allowed"]; v != nil {
		d.allowed(v, f+".allowed", &c.Allowed)
	}
	if v := m["time"]; v != nil {
		tm := d.mapping(v, f+".time", []string{"element", "unit"})
		c.Time = &algorithms.ReplyTime{}
		set(&c.Time.Element, tm["element"], f+".time.element", d.int)
		if u := tm["unit"]; u != nil {
			if s, ok := d.str(u, f+".time.unit"); ok {
				c.Time.Unit = algorithms.TimeUnit(s)
			}
		}
	}
	if v := m["contract"]; v != nil {
		d.contract(v, f+".contract", c)
	}
	return c
}

// contract decodes the contract: v of a custom algorithm (at field path cf) into c.Contract; a
// number written as a template is kept in c.ContractTemplates.
func (d *decoder) contract(v *yaml.Node, cf string, c *algorithms.CustomSpec) {
	cm := d.mapping(v, cf, []string{"kind", "limit", "window", "capacity", "rate", "per", "granularity"})
	k := &c.Contract
	if kn := cm["kind"]; kn != nil {
		if s, ok := d.str(kn, cf+".kind"); ok {
			k.Kind = algorithms.ContractKind(s)
		}
	}
	// A number written as a template ("{{limit}}") is kept as text, filled in for the
	// scenario's limit when it is validated and for each run's limit when it runs.
	tmpl := func(field string) bool {
		n := cm[field]
		if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" || !strings.Contains(n.Value, "{{") {
			return false
		}
		if c.ContractTemplates == nil {
			c.ContractTemplates = map[string]string{}
		}
		c.ContractTemplates[field] = n.Value
		return true
	}
	for _, p := range []struct {
		field string
		int   *int64
		dur   *time.Duration
	}{
		{"limit", &k.Limit, nil}, {"window", nil, &k.Window}, {"capacity", &k.Capacity, nil},
		{"rate", &k.RefillPermits, nil}, {"per", nil, &k.RefillPer},
	} {
		if tmpl(p.field) {
			continue
		}
		if p.int != nil {
			set(p.int, cm[p.field], cf+"."+p.field, d.int64)
		} else {
			set(p.dur, cm[p.field], cf+"."+p.field, d.duration)
		}
	}
	set(&k.Granularity, cm["granularity"], cf+".granularity", d.duration)
}

func (d *decoder) allowed(n *yaml.Node, f string, a *algorithms.ReplyRule) {
	fields := []string{"element"}
	for _, op := range algorithms.RuleOps {
		fields = append(fields, string(op))
	}
	m := d.mapping(n, f, fields)
	if m == nil {
		return
	}
	set(&a.Element, m["element"], f+".element", d.int)
	var rules []string
	for _, op := range algorithms.RuleOps {
		v := m[string(op)]
		if v == nil {
			continue
		}
		rules = append(rules, string(op))
		rf := f + "." + string(op)
		switch {
		case op == algorithms.RuleIsNil:
			if b, ok := d.bool(v, rf); ok {
				if !b {
					d.fail(v, rf, "is_nil: false is not a rule; use is_nil: true, or another rule")
				} else {
					a.Op = op
				}
			}
		case op.Numeric() && v.Kind == yaml.ScalarNode && v.ShortTag() != "!!str":
			// A number: its value as a number reads it (0x10, 1e3), in decimal.
			if x, ok := d.float(v, rf); ok {
				a.Op, a.Value = op, strconv.FormatFloat(x, 'g', -1, 64)
				var i int64
				if v.ShortTag() == "!!int" && v.Decode(&i) == nil {
					a.Value = strconv.FormatInt(i, 10)
				}
			}
		default:
			// Text, or a template such as "{{limit}}" (validation checks it).
			if s, ok := d.str(v, rf); ok {
				a.Op, a.Value = op, s
			}
		}
	}
	switch {
	case len(rules) == 0:
		d.fail(n, f, "needs exactly one rule: %s; got none", algorithms.RuleNames())
	case len(rules) > 1:
		d.fail(n, f, "needs exactly one rule; got %s", strings.Join(rules, " and "))
	}
}

func (c *checker) custom(f string, cu *algorithms.CustomSpec, cluster bool) {
	if cu.Name == "" {
		c.add(f+".name", "a custom script needs a name")
	}
	field := "script"
	if cu.Function != "" {
		field = "library"
	}
	if cu.Script == "" {
		c.add(f+"."+field, "a custom script needs script: the path of its Lua file, relative to the scenario (or library: and function: for a Redis function)")
	} else if cu.Source == "" && !c.s.present(f+"."+field) {
		c.add(f+"."+field, "%s %s was not read (set Source, or load the scenario with Load)", field, cu.Script)
	}
	if len(cu.Keys) == 0 {
		c.add(f+".keys", "a custom script needs at least one key template, such as \"rl:{{tag}}\"")
	}
	// Templates: each parses; with the scenario's limit (when valid), none divides by zero or
	// overflows on the limit's constants.
	check := func(field, t string) {
		err := algorithms.CheckTemplate(t)
		if err == nil && c.s.Limit.Validate() == nil {
			err = algorithms.CheckTemplateWith(t, c.s.Limit)
		}
		if err != nil {
			c.add(field, "%v", err)
		}
	}
	for i, k := range cu.Keys {
		check(fmt.Sprintf("%s.keys[%d]", f, i), k)
	}
	for i, a := range cu.Args {
		check(fmt.Sprintf("%s.args[%d]", f, i), a)
	}
	if cluster {
		var keys []string
		for i, k := range cu.Keys {
			if k == "" {
				c.add(fmt.Sprintf("%s.keys[%d]", f, i), "%v", algorithms.ErrEmptyKeyOnCluster)
				continue
			}
			keys = append(keys, k)
		}
		if err := algorithms.KeysShareSlot(keys); err != nil {
			c.add(f+".keys", "%v", err)
		}
	}
	al := cu.Allowed
	if al.Element < 0 {
		c.add(f+".allowed.element", "must be >= 1 (1-based), or omitted for a scalar reply; got %d", al.Element)
	}
	switch {
	case al.Op == "":
		c.add(f+".allowed", "needs exactly one rule: %s", algorithms.RuleNames())
	case !slices.Contains(algorithms.RuleOps, al.Op):
		c.add(f+".allowed", "unknown rule %q; use %s", al.Op, algorithms.RuleNames())
	default:
		if err := al.CheckValue(); err != nil {
			c.add(f+".allowed."+string(al.Op), "%v", err)
		} else if al.Op != algorithms.RuleIsNil && c.s.Limit.Validate() == nil {
			if err := algorithms.CheckTemplateWith(al.Value, c.s.Limit); err != nil {
				c.add(f+".allowed."+string(al.Op), "%v", err)
			}
		}
	}
	if t := cu.Time; t != nil {
		if t.Element < 1 {
			c.add(f+".time.element", "must be >= 1 (1-based), got %d", t.Element)
		} else if al.Element == 0 {
			c.add(f+".time", "time needs an array reply, but allowed reads a scalar reply (no element)")
		} else if t.Element == al.Element {
			c.add(f+".time.element", "is the element allowed reads (%d)", al.Element)
		}
		if t.Unit.Duration() == 0 {
			c.add(f+".time.unit", "unknown unit %q; use us, ms or s", t.Unit)
		}
	}
	c.contract(f+".contract", cu.Contract, cu.ContractTemplates)
}

// contract checks a custom script's contract. Its numbers written as templates (tmpl, by field)
// are filled in for the scenario's limit first; one that cannot be is reported at its field.
func (c *checker) contract(f string, k algorithms.Contract, tmpl map[string]string) {
	fields := make([]string, 0, len(tmpl))
	for field := range tmpl {
		fields = append(fields, field)
	}
	slices.Sort(fields)
	for _, field := range fields {
		if c.s.Limit.Validate() != nil {
			continue // limit's own problems are reported; the contract cannot be filled in
		}
		if err := algorithms.FillContract(&k, field, tmpl[field], c.s.Limit); err != nil {
			c.add(f+"."+field, "%v", err)
		}
	}
	type param struct {
		name string
		set  bool
		bad  string // non-empty: value is invalid
	}
	posInt := func(v int64) string {
		if v < 0 {
			return fmt.Sprintf("must be > 0, got %d", v)
		}
		return ""
	}
	posDur := func(v time.Duration) string {
		if v < 0 {
			return fmt.Sprintf("must be > 0, got %s", v)
		}
		return ""
	}
	params := []param{
		{"limit", k.Limit != 0, posInt(k.Limit)},
		{"window", k.Window != 0, posDur(k.Window)},
		{"capacity", k.Capacity != 0, posInt(k.Capacity)},
		{"rate", k.RefillPermits != 0, posInt(k.RefillPermits)},
		{"per", k.RefillPer != 0, posDur(k.RefillPer)},
	}
	var need []string
	switch k.Kind {
	case algorithms.SlidingWindow, algorithms.FixedWindow, algorithms.FirstHitWindow:
		need = []string{"limit", "window"}
	case algorithms.TokenBucket:
		need = []string{"capacity", "rate", "per"}
	case algorithms.NoContract:
	case "":
		c.add(f+".kind", "a contract needs kind: sliding-window, fixed-window, first-hit-window, token-bucket or none")
		return
	default:
		c.add(f+".kind", "unknown contract kind %q; use sliding-window, fixed-window, first-hit-window, token-bucket or none", k.Kind)
		return
	}
	for _, p := range params {
		pf := f + "." + p.name
		if _, templated := tmpl[p.name]; templated && contains(need, p.name) {
			continue // filled in above, or reported there
		}
		switch {
		case contains(need, p.name) && !p.set:
			if c.s.present(pf) {
				c.add(pf, "must be > 0")
			} else {
				c.add(pf, "missing: a %s contract needs %s", k.Kind, strings.Join(need, ", "))
			}
		case contains(need, p.name) && p.bad != "":
			c.add(pf, "%s", p.bad)
		case !contains(need, p.name) && (p.set || c.s.present(pf)):
			if len(need) == 0 {
				c.add(pf, "does not apply to a contract of kind none")
			} else {
				c.add(pf, "does not apply to a %s contract (it takes %s)", k.Kind, strings.Join(need, ", "))
			}
		}
	}
	if k.Granularity < 0 {
		c.add(f+".granularity", "must be >= 0, got %s", k.Granularity)
	}
}
