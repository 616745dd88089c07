package hunt

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/limitbench/limitbench/internal/arrival"
	"github.com/limitbench/limitbench/internal/trace"
	"github.com/limitbench/limitbench/report"
	"github.com/limitbench/limitbench/scenarios"
)

// fileSafe keeps a name usable as part of a file name: '/', '\', ':' and ' ' become '_'.
func fileSafe(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r == ' ' {
			return '_'
		}
		return r
	}, name)
}

// algorithmsYAML returns the algorithms: field of q's reproducer scenario, written into dir: a
// built-in's name, or a custom algorithm's definition (customEntryYAML).
func (p *Plan) algorithmsYAML(q quarry, dir string) (string, error) {
	if q.custom {
		return customEntryYAML(p.o.Scenario.File, q.target.Algorithm, dir)
	}
	return "algorithms: [" + q.target.Algorithm + "]\n", nil
}

// reproScenario returns a scenario that replays the trace file traceFile (beside it) against alg
// on topo with s's limit, at the frame the hunt ran it, with workers clients (the workers that
// send the trace's own clients), and expects the violation. algs is its algorithms: field
// (algorithmsYAML); replay is the scenario's path as `limitbench run` takes it from the
// directory the hunt ran in.
func reproScenario(s *scenarios.Scenario, alg, topo, traceFile string, frame arrival.Align, t *trace.Trace, algs string, workers int,
	replay string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Written by limitbench hunt from %s: replays the schedule that broke %s.\n", s.File, alg)
	fmt.Fprintf(&b, "# From the directory the hunt ran in: limitbench run %s  (passes when the violation is found again)\n", replay)
	b.WriteString(scheduleYAML(s, fileSafe(alg)+"-repro", topo, traceFile, frame, t, workers,
		fmt.Sprintf("The schedule limitbench hunt found and shrank that breaks %s's contract (%s).", alg, requestsText(SizeOf(t)))))
	b.WriteString(algs)
	fmt.Fprintf(&b, "expect:\n  violations: [%s]\n", alg)
	return b.Bytes()
}

// requestsText says how many requests from how many clients a schedule of size z has:
// "21 requests from 1 client".
func requestsText(z Size) string {
	return fmt.Sprintf("%d %s from %d %s", z.Rows, report.Plural(int64(z.Rows), "request", "requests"),
		z.Clients, report.Plural(int64(z.Clients), "client", "clients"))
}

// scheduleYAML returns the fields of a scenario named name that replays traceFile on topo with
// s's limit at frame, sent by workers clients (each row goes as its own client of the trace), up
// to its algorithms: field, with t's faults (and the duration they need) when it places any.
func scheduleYAML(s *scenarios.Scenario, name, topo, traceFile string, frame arrival.Align, t *trace.Trace, workers int, description string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version: 1\nname: %s\n", name)
	fmt.Fprintf(&b, "description: %s\n", description)
	fmt.Fprintf(&b, "topologies: [%s]\n", topo)
	fmt.Fprintf(&b, "clients: %d   # workers that send the trace's rows, each as the row's own client\n", workers)
	fmt.Fprintf(&b, "arrival:\n  trace: %s\n", traceFile)
	if frame.Every > 0 {
		fmt.Fprintf(&b, "  align: {every: %s, offset: %s}\n", frame.Every, frame.Offset)
	}
	l := s.Limit
	fmt.Fprintf(&b, "limit: {limit: %d, window: %s", l.Limit, l.Window)
	if l.Burst != 0 {
		fmt.Fprintf(&b, ", burst: %d", l.Burst)
	}
	if l.ConsumerLimit != 0 {
		fmt.Fprintf(&b, ", consumer_limit: %d", l.ConsumerLimit)
	}
	b.WriteString("}\n")
	if len(t.Faults) > 0 {
		// The trace file holds the rows only: the faults and the time they need are here.
		fmt.Fprintf(&b, "duration: %s   # the trace's rows and faults\n", scenarios.TraceDuration(t, 0))
		b.WriteString("faults:   # placed by the hunt, on the master; each one's effects are its own for a window after it\n")
		for _, f := range t.Faults {
			fmt.Fprintf(&b, "  - {at: %s, kind: %s", f.At, f.Kind)
			if f.Duration > 0 {
				fmt.Fprintf(&b, ", duration: %s", f.Duration)
			}
			b.WriteString("}\n")
		}
	}
	return b.String()
}

// customEntryYAML returns the algorithms: field of a reproducer scenario written into dir for the
// custom algorithm name of the scenario file scenario: its definition as the file writes it
// (templates, rules and contract unchanged), with its script: or library: path made relative to
// dir (an absolute path stays absolute), so that `limitbench run` reads the same script from the
// reproducer's directory.
func customEntryYAML(scenario, name, dir string) (string, error) {
	entry, err := customEntryNode(scenario, name)
	if err != nil {
		return "", err
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Style: entry.Style}
	for i := 0; i+1 < len(entry.Content); i += 2 {
		k, v := *entry.Content[i], *entry.Content[i+1]
		k.HeadComment, k.LineComment, k.FootComment = "", "", ""
		v.HeadComment, v.LineComment, v.FootComment = "", "", ""
		if (k.Value == "script" || k.Value == "library") && v.Kind == yaml.ScalarNode && !filepath.IsAbs(v.Value) {
			rel, err := relativeTo(filepath.Join(filepath.Dir(scenario), v.Value), dir)
			if err != nil {
				return "", err
			}
			v.Value, v.Style, v.Tag = rel, 0, "!!str"
		}
		out.Content = append(out.Content, &k, &v)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.SequenceNode, Content: []*yaml.Node{out}}); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	return "algorithms:\n  " + strings.Join(lines, "\n  ") + "\n", nil
}

// customEntryNode returns the entry of the scenario file scenario's algorithms: list that
// defines the custom algorithm name, as YAML nodes.
func customEntryNode(scenario, name string) (*yaml.Node, error) {
	data, err := os.ReadFile(scenario)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", scenario, err)
	}
	var entry *yaml.Node
	if len(doc.Content) == 1 {
		if algs := mappingValue(doc.Content[0], "algorithms"); algs != nil && algs.Kind == yaml.SequenceNode {
			for _, it := range algs.Content {
				if n := mappingValue(it, "name"); it.Kind == yaml.MappingNode && n != nil && n.Value == name {
					entry = it
				}
			}
		}
	}
	if entry == nil {
		return nil, fmt.Errorf("%s: no custom algorithm %q under algorithms", scenario, name)
	}
	return entry, nil
}

// mappingValue returns the value of key in the mapping n, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// relativeTo returns path relative to the directory dir, both taken from the working directory
// when relative.
func relativeTo(path, dir string) (string, error) {
	ap, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	ad, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(ad, ap)
	if err != nil {
		return ap, nil // another volume: the absolute path still works
	}
	return filepath.ToSlash(rel), nil
}
