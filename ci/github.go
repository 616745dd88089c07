package ci

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/limitbench/limitbench/gate"
	"github.com/limitbench/limitbench/hunt"
	"github.com/limitbench/limitbench/result"
	"github.com/limitbench/limitbench/scenarios"
	"github.com/limitbench/limitbench/verify"
)

// SummaryLimit is the most GitHub shows of a step's summary ($GITHUB_STEP_SUMMARY): 1 MiB.
const SummaryLimit = 1 << 20

// AppendSummary appends md to the step summary file at path, cut at a line so that the file
// stays under SummaryLimit, and when it cut, a line that says so and where the whole is (full).
func AppendSummary(path, md, full string) error {
	size := int64(0)
	if st, err := os.Stat(path); err == nil {
		size = st.Size()
	}
	note := fmt.Sprintf("\n\n> **Cut:** this summary was cut to stay under GitHub's 1 MiB limit for a step's summary; the whole report is %s.\n", full)
	room := SummaryLimit - int(size) - len(note) - 2
	text, cut := CutLines(strings.TrimRight(md, "\n")+"\n", room)
	if cut {
		text += note
	}
	return appendFile(path, "\n"+text, "step summary")
}

// CutLines returns s cut to at most n bytes after the end of a line (or of a rune, when its first
// line is longer), and whether it cut.
func CutLines(s string, n int) (string, bool) {
	if len(s) <= n {
		return s, false
	}
	cut := max(n, 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if i := strings.LastIndexByte(s[:cut], '\n'); i >= 0 {
		cut = i + 1
	}
	return s[:cut], true
}

// appendFile appends text to the file at path, creating it; errors say what the file is.
func appendFile(path, text, what string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	_, werr := io.WriteString(f, text)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("%s %s: %w", what, path, werr)
	}
	return nil
}

// Annotation is one GitHub Actions error annotation: Message at Line of File (a path relative
// to the repository's root; Line 0 is the file as a whole, File "" no file).
type Annotation struct {
	File    string
	Line    int
	Title   string
	Message string
}

// String returns the workflow command that makes the annotation:
// "::error file=F,line=N,title=T::message", escaped as GitHub's toolkit does.
func (a Annotation) String() string { return command("error", a) }

func command(kind string, a Annotation) string {
	var props []string
	if a.File != "" {
		props = append(props, "file="+escapeProperty(a.File))
		if a.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", a.Line))
		}
	}
	if a.Title != "" {
		props = append(props, "title="+escapeProperty(a.Title))
	}
	s := "::" + kind
	if len(props) > 0 {
		s += " " + strings.Join(props, ",")
	}
	return s + "::" + escapeData(a.Message)
}

func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// MaxAnnotations is how many error annotations GitHub shows for a step.
const MaxAnnotations = 10

// Annotator collects a step's annotations and prints them: at most MaxAnnotations errors, then
// one warning that says how many more there were. Commands that share a step share one.
type Annotator struct {
	list []Annotation
}

// Add collects as.
func (n *Annotator) Add(as ...Annotation) { n.list = append(n.list, as...) }

// Flush prints the annotations collected so far to w, one workflow command a line, and forgets
// them.
func (n *Annotator) Flush(w io.Writer) error {
	var b strings.Builder
	for i, a := range n.list {
		if i == MaxAnnotations {
			more := len(n.list) - MaxAnnotations
			b.WriteString(command("warning", Annotation{Title: "limitbench",
				Message: fmt.Sprintf("%d more error%s than GitHub shows for a step: see the job summary and the report", more, plural(more))}) + "\n")
			break
		}
		b.WriteString(a.String() + "\n")
	}
	n.list = nil
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Places says where a scenario file defines each algorithm and threshold, for annotations: the
// file (relative to the repository's root when it lies inside it), the line of each entry of
// algorithms by name ("" for an "all" entry or the algorithms field itself), of each threshold
// by its text, and of each name under expect.violations. A zero Places annotates no file.
type Places struct {
	File       string
	Algorithms map[string]int
	Thresholds map[string]int
	Expected   map[string]int
}

// PlacesOf returns the places of s, its file relative to root (the repository's root, such as
// $GITHUB_WORKSPACE; "" keeps the path as s has it). A field a flag set has no line.
func PlacesOf(s *scenarios.Scenario, root string) Places {
	p := Places{File: filepath.ToSlash(s.File), Algorithms: map[string]int{}, Thresholds: map[string]int{}, Expected: map[string]int{}}
	if root != "" {
		if abs, err := filepath.Abs(s.File); err == nil {
			if rel, err := filepath.Rel(root, abs); err == nil && !strings.HasPrefix(rel, "..") {
				p.File = filepath.ToSlash(rel)
			}
		}
	}
	line := func(field string) int { return s.ProblemAt(field, "").Line }
	p.Algorithms[""] = line("algorithms")
	for i, a := range s.Algorithms {
		name := a.Name
		if name == scenarios.AllAlgorithms {
			name = ""
		}
		p.Algorithms[name] = line(fmt.Sprintf("algorithms[%d]", i))
	}
	for i, t := range s.Thresholds {
		p.Thresholds[t.Text] = line(fmt.Sprintf("thresholds[%d]", i))
	}
	for i, n := range s.Expect.Violations {
		p.Expected[n] = line(fmt.Sprintf("expect.violations[%d]", i))
	}
	return p
}

// algorithm returns the line of an algorithm: its entry, else the "all" entry or the algorithms
// field.
func (p Places) algorithm(name string) int {
	if l, ok := p.Algorithms[name]; ok {
		return l
	}
	return p.Algorithms[""]
}

// at returns an annotation at line of p's file (no line without a file).
func (p Places) at(line int, title, msg string) Annotation {
	if p.File == "" {
		line = 0
	}
	return Annotation{File: p.File, Line: line, Title: title, Message: msg}
}

// RunAnnotations returns the annotations of a run's or a merge's result, placed by p: one per
// entry with a definite violation the scenario does not expect or tolerate (at its algorithm),
// per broken threshold of an entry (at the threshold; a default threshold, at the algorithm),
// and per expected violation that was missed (at its expect.violations entry).
func RunAnnotations(r *result.Result, p Places) []Annotation {
	var out []Annotation
	for i := range r.Entries {
		e := &r.Entries[i]
		if r.IsReference(e) {
			continue
		}
		v := e.Verification
		title := fmt.Sprintf("limitbench: %s on %s", e.Algorithm, e.Topology)
		algLine := p.algorithm(e.Algorithm)
		switch e.Label() {
		case string(verify.Fail):
			if v.DefiniteViolations > 0 && !v.ExpectedViolation && !v.MayViolate {
				msg := fmt.Sprintf("%d definite violations of %s", v.DefiniteViolations, v.Contract)
				if v.Where != "" {
					msg += "; worst excess " + fmt.Sprint(v.WorstExcess) + " permits " + v.Where
				}
				out = append(out, p.at(algLine, title, msg))
			}
		case result.LabelMissed:
			line, ok := p.Expected[e.Algorithm]
			if !ok {
				line = algLine
			}
			out = append(out, p.at(line, title, "expected to be flagged with a definite violation, but none was found: the harness missed a planted bug"))
		}
		for _, t := range v.Thresholds {
			if t.Status != verify.ThresholdBroken {
				continue
			}
			line, ok := p.Thresholds[t.Threshold]
			if !ok {
				line = algLine
			}
			kind := "threshold"
			if t.Default {
				kind = "default threshold"
			}
			out = append(out, p.at(line, title, fmt.Sprintf("%s %q broken: %s", kind, t.Threshold, t.Shown)))
		}
	}
	return out
}

// GateAnnotations returns an annotation per row of g that fails the gate, at its algorithm.
func GateAnnotations(g *gate.Report, p Places) []Annotation {
	var out []Annotation
	for _, r := range g.Rows {
		if !g.Policy.Fails(r.Verdict) {
			continue
		}
		line := p.algorithm(r.Algorithm)
		out = append(out, p.at(line, fmt.Sprintf("limitbench gate: %s on %s", r.Algorithm, r.Topology), rowWords(r)))
	}
	return out
}

// HuntAnnotations returns an annotation per violation a hunt found that the scenario does not
// expect, and per algorithm under expect.violations (mustBreak) that held, at its algorithm.
func HuntAnnotations(f *hunt.File, p Places, mustBreak []string) []Annotation {
	var out []Annotation
	for _, e := range f.Entries {
		c := huntCase(e, "", mustBreak)
		if c.Failure == nil {
			continue
		}
		line := p.algorithm(e.Algorithm)
		out = append(out, p.at(line, "limitbench hunt: "+c.Name, c.Failure.Message))
	}
	return out
}

// SetOutputs appends the step outputs to the output file at path ($GITHUB_OUTPUT), one
// name=value line each. A value must be one line.
func SetOutputs(path string, outputs [][2]string) error {
	var b strings.Builder
	for _, o := range outputs {
		if strings.ContainsAny(o[0]+o[1], "\r\n") || o[0] == "" {
			return fmt.Errorf("step output %q=%q: names and values are one line", o[0], o[1])
		}
		b.WriteString(o[0] + "=" + o[1] + "\n")
	}
	return appendFile(path, b.String(), "step outputs")
}
