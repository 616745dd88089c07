package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/limitbench/limitbench/scenarios"
)

// TestDocs checks what README.md and the pages under docs/ (with the READMEs of examples/custom and
// deploy/kubernetes) show a user, so that a page cannot drift from the code it describes:
//
//   - Every fenced block says what it holds in its info string. A ```yaml block is a scenario and
//     loads with the scenario loader (relative paths from the page's directory, or from dir=PATH);
//     a block that only shows part of a file's syntax is ```yaml fragment and must parse as YAML; a
//     block that shows a file of the repository is ```yaml file=PATH and must be that file or a run
//     of its lines. A scenario block named like a scenario file of the repository must be marked
//     file= (it claims to be that file). A ```csv trace or ```jsonl trace block loads as the trace
//     of a scenario.
//   - Every `limitbench SUBCOMMAND ...` in a shell (```sh) or synopsis (```usage) block, and in an
//     inline code span, names a subcommand and only flags that subcommand's -h lists; a path
//     argument inside a folder of the repository names a file that exists. `make TARGET` names a
//     Makefile target; `go test ./PKG -run|-bench PATTERN [-args -FLAG]` names a package, a test or
//     benchmark that exists and flags its tests define.
//   - Links between the pages resolve, files and #anchors.
//   - README.md stays a front door of at most 300 lines.
func TestDocs(t *testing.T) {
	c := newDocChecker(t)
	for _, p := range docPages(t) {
		t.Run(p, func(t *testing.T) {
			for _, msg := range c.checkPage(t, p, readRepoFile(t, p)) {
				t.Error(msg)
			}
		})
	}
	t.Logf("checked: %v", c.checked)
	for _, what := range []string{"limitbench command", "scenario", "file excerpt", "link"} {
		if c.checked[what] == 0 { // the pages were not read as the checker expects
			t.Errorf("no %s was checked in any page", what)
		}
	}
	if n := len(strings.Split(strings.TrimRight(readRepoFile(t, "README.md"), "\n"), "\n")); n > 300 {
		t.Errorf("README.md has %d lines; the front door stays at most 300 (depth goes to docs/)", n)
	}
}

// repoRoot is the repository's root seen from this package's directory.
const repoRoot = "../.."

// docPages returns the pages TestDocs checks, relative to the repository root.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md", "examples/custom/README.md", "deploy/kubernetes/README.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, err := filepath.Rel(repoRoot, m)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages
}

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A doc is one Markdown page split into what TestDocs checks.
type doc struct {
	path     string          // relative to the repository root
	fences   []fence         // fenced code blocks
	spans    []span          // inline code spans outside fences
	links    []span          // link targets outside fences and code spans
	headings map[string]bool // GitHub anchors of its headings
}

// A fence is one fenced code block.
type fence struct {
	at    string            // "page:line" of the opening fence
	lang  string            // first word of the info string
	attrs map[string]string // the info string's other words: key=value, or a bare word mapped to ""
	body  string            // the lines inside, the fence's indentation removed
}

// A span is a piece of text at a place of a page.
type span struct {
	at   string
	text string
}

var (
	codeSpanRE = regexp.MustCompile("`([^`]+)`")
	linkRE     = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	headingRE  = regexp.MustCompile(`^#{1,6} `)
)

// parseDoc splits the text of the page at path (relative to the repository root).
func parseDoc(path, text string) *doc {
	d := &doc{path: path, headings: map[string]bool{}}
	lines := strings.Split(text, "\n")
	var para []string // the current paragraph's lines, for code spans that wrap
	paraStart := 0
	flush := func() {
		d.addProse(paraStart, strings.Join(para, "\n"))
		para = nil
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case strings.HasPrefix(trimmed, "```"):
			flush()
			f, end := readFence(path, lines, i)
			d.fences = append(d.fences, f)
			i = end
		case strings.TrimSpace(line) == "":
			flush()
		default:
			if headingRE.MatchString(line) {
				d.addHeading(line)
			}
			if para == nil {
				paraStart = i + 1
			}
			para = append(para, line)
		}
	}
	flush()
	return d
}

// readFence reads the fenced block whose opening fence is lines[open]; it returns the block and
// the index of its closing fence.
func readFence(path string, lines []string, open int) (fence, int) {
	indent := len(lines[open]) - len(strings.TrimLeft(lines[open], " "))
	info := strings.Fields(strings.TrimPrefix(strings.TrimLeft(lines[open], " "), "```"))
	f := fence{at: fmt.Sprintf("%s:%d", path, open+1), attrs: map[string]string{}}
	if len(info) > 0 {
		f.lang = info[0]
		for _, w := range info[1:] {
			k, v, _ := strings.Cut(w, "=")
			f.attrs[k] = v
		}
	}
	var body []string
	end := open + 1
	for ; end < len(lines); end++ {
		if strings.TrimSpace(lines[end]) == "```" {
			break
		}
		l := lines[end]
		l = l[min(indent, len(l)-len(strings.TrimLeft(l, " "))):]
		body = append(body, l)
	}
	f.body = strings.Join(body, "\n") + "\n"
	return f, end
}

// addProse records the code spans and links of a paragraph that starts at line first.
func (d *doc) addProse(first int, text string) {
	at := func(off int) string { return fmt.Sprintf("%s:%d", d.path, first+strings.Count(text[:off], "\n")) }
	for _, m := range codeSpanRE.FindAllStringSubmatchIndex(text, -1) {
		d.spans = append(d.spans, span{at(m[0]), strings.Join(strings.Fields(text[m[2]:m[3]]), " ")})
	}
	plain := codeSpanRE.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat(" ", len(s)) })
	for _, m := range linkRE.FindAllStringSubmatchIndex(plain, -1) {
		d.links = append(d.links, span{at(m[0]), plain[m[2]:m[3]]})
	}
}

// addHeading records the GitHub anchor of a heading line ("## Faults during the load").
func (d *doc) addHeading(line string) {
	title := strings.TrimSpace(strings.TrimLeft(line, "#"))
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r):
			b.WriteRune(r)
		}
	}
	a := b.String()
	for n := 1; d.headings[a]; n++ { // GitHub numbers a repeated heading's anchor
		a = fmt.Sprintf("%s-%d", b.String(), n)
	}
	d.headings[a] = true
}

// A docChecker checks pages against the repository and the command's own flags; it collects the
// problems of one page at a time.
type docChecker struct {
	t         *testing.T                 // for failures of the test itself (a file it cannot read)
	flags     map[string]map[string]bool // subcommand -> flag name -> takes a value
	makefile  map[string]bool            // Makefile targets
	scenarios map[string]string          // scenario name -> the repository file that defines it
	checked   map[string]int             // what was checked, counted, so that a page misread is seen
	probs     []string
}

func newDocChecker(t *testing.T) *docChecker {
	t.Helper()
	c := &docChecker{t: t, flags: map[string]map[string]bool{}, makefile: map[string]bool{}, scenarios: map[string]string{},
		checked: map[string]int{}}
	for _, m := range regexp.MustCompile(`(?m)^([A-Za-z0-9_-]+):`).FindAllStringSubmatch(readRepoFile(t, "Makefile"), -1) {
		c.makefile[m[1]] = true
	}
	for _, pattern := range []string{"scenarios/*.yaml", "examples/*/*.yaml", "bench/testdata/*.yaml"} {
		files, err := filepath.Glob(filepath.Join(repoRoot, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			s, err := scenarios.Load(f)
			if err != nil {
				t.Fatalf("scenario file of the repository: %v", err)
			}
			rel, _ := filepath.Rel(repoRoot, f)
			c.scenarios[s.Name] = filepath.ToSlash(rel)
		}
	}
	return c
}

func (c *docChecker) addf(at, format string, a ...any) {
	c.probs = append(c.probs, at+": "+fmt.Sprintf(format, a...))
}

// checkPage returns the problems of the page at path (relative to the repository root) whose
// text is given.
func (c *docChecker) checkPage(t *testing.T, path, text string) []string {
	c.t, c.probs = t, nil
	d := parseDoc(path, text)
	for _, f := range d.fences {
		c.checkFence(d, f)
	}
	for _, s := range d.spans {
		if words := usageWords(s.text); len(words) > 0 {
			c.checkCommand(s.at, words)
		}
	}
	for _, l := range d.links {
		c.checked["link"]++
		c.checkLink(d, l)
	}
	return c.probs
}

// checkLink checks that a link's target exists and, with an #anchor, that the page has it.
func (c *docChecker) checkLink(d *doc, l span) {
	target := l.text
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return
	}
	file, anchor, _ := strings.Cut(target, "#")
	page := d
	if file != "" {
		rel := filepath.ToSlash(filepath.Join(filepath.Dir(d.path), file))
		if _, err := os.Stat(filepath.Join(repoRoot, rel)); err != nil {
			c.addf(l.at, "link %s: no such file %s", target, rel)
			return
		}
		if anchor == "" {
			return
		}
		if !strings.HasSuffix(rel, ".md") {
			c.addf(l.at, "link %s: an anchor into a file that is not Markdown", target)
			return
		}
		page = parseDoc(rel, readRepoFile(c.t, rel))
	}
	if anchor != "" && !page.headings[anchor] {
		c.addf(l.at, "link %s: %s has no heading with the anchor #%s", target, page.path, anchor)
	}
}

// checkFence checks one fenced block by its info string.
func (c *docChecker) checkFence(d *doc, f fence) {
	switch f.lang {
	case "":
		c.addf(f.at, "a fenced block without an info string: say what it holds (sh, usage, yaml, text, ...)")
	case "yaml":
		c.checkYAML(d, f)
	case "csv", "jsonl":
		if _, ok := f.attrs["trace"]; ok {
			c.checkTrace(f)
		}
	case "sh", "bash", "shell":
		for _, line := range logicalLines(f.body) {
			for _, words := range shellCommands(line) {
				c.checkCommand(f.at, words)
			}
		}
	case "usage":
		for _, line := range logicalLines(f.body) {
			if words := usageWords(line); len(words) > 0 {
				c.checkCommand(f.at, words)
			}
		}
	}
}

// checkYAML checks a ```yaml block: a file of the repository, a fragment or a whole scenario.
func (c *docChecker) checkYAML(d *doc, f fence) {
	for k := range f.attrs {
		if k != "file" && k != "fragment" && k != "dir" {
			c.addf(f.at, "unknown word %q in the info string (known: file=PATH, fragment, dir=PATH)", k)
		}
	}
	if path, ok := f.attrs["file"]; ok {
		c.checked["file excerpt"]++
		b, err := os.ReadFile(filepath.Join(repoRoot, path))
		if err != nil {
			c.addf(f.at, "the block says it shows %s: %v", path, err)
		} else if want := strings.ReplaceAll(string(b), "\r\n", "\n"); !isRunOfLines(f.body, want) {
			c.addf(f.at, "the block says it shows %s, but its lines are not that file's (nor a run of them); the file is:\n%s", path, want)
		}
		return
	}
	if _, ok := f.attrs["fragment"]; ok {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(f.body), &n); err != nil || n.Kind == 0 {
			c.addf(f.at, "a YAML fragment that does not parse: %v", err)
		}
		return
	}
	c.checked["scenario"]++
	dir := filepath.Dir(d.path)
	if v, ok := f.attrs["dir"]; ok {
		dir = v
	}
	s, err := scenarios.Parse(filepath.Join(repoRoot, dir, "block.yaml"), []byte(f.body))
	if err != nil {
		c.addf(f.at, "the scenario does not load (block.yaml is the block, its lines counted from 1; mark a part of a scenario ```yaml fragment):\n%v", err)
		return
	}
	if file, ok := c.scenarios[s.Name]; ok {
		c.addf(f.at, "the scenario is named %q like %s: mark the block file=%s so that it is compared with it, or give it another name", s.Name, file, file)
	}
}

// isRunOfLines reports whether part's lines are a run of consecutive lines of whole.
func isRunOfLines(part, whole string) bool {
	norm := func(s string) []string {
		lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " \t")
		}
		return lines
	}
	p, w := norm(part), norm(whole)
	for i := 0; i+len(p) <= len(w); i++ {
		if slices.Equal(p, w[i:i+len(p)]) {
			return true
		}
	}
	return false
}

// checkTrace loads a ```csv trace or ```jsonl trace block as the trace of a scenario.
func (c *docChecker) checkTrace(f fence) {
	dir := c.t.TempDir()
	name := "trace." + f.lang
	if err := os.WriteFile(filepath.Join(dir, name), []byte(f.body), 0o644); err != nil {
		c.t.Fatal(err)
	}
	data := []byte("version: 1\nclients: 4\narrival: {trace: " + name + "}\n")
	if _, err := scenarios.Parse(filepath.Join(dir, "scenario.yaml"), data); err != nil {
		c.addf(f.at, "the trace does not load as a scenario's arrival.trace:\n%v", err)
	}
}

// logicalLines joins a block's lines continued with a trailing backslash.
func logicalLines(body string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(body, "\n") {
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		out = append(out, cur+l)
		cur = ""
	}
	return out
}

// shellCommands splits a shell line into its simple commands' words: quotes removed, a comment
// dropped, split at ; & && | || and ( ), with leading variable assignments and do/then/else gone.
func shellCommands(line string) [][]string { return splitCommands(line, false) }

// splitCommands is shellCommands; with usage, a synopsis: brackets and the bars between
// alternatives (outside quotes) separate words and do not end a command.
func splitCommands(line string, usage bool) [][]string {
	var cmds [][]string
	var words []string
	var cur strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	split := func() {
		end()
		if len(words) > 0 {
			cmds = append(cmds, words)
		}
		words = nil
	}
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == '#' && !inWord:
			split()
			return trimCommands(cmds)
		case usage && strings.ContainsRune("[]|", r):
			end()
		case strings.ContainsRune(";&|()", r):
			split()
		case r == ' ' || r == '\t':
			end()
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	split()
	return trimCommands(cmds)
}

// trimCommands drops what comes before each command's program: variable assignments, do, then,
// else, time, sudo, exec.
func trimCommands(cmds [][]string) [][]string {
	for i, w := range cmds {
		for len(w) > 0 && (strings.Contains(w[0], "=") || slices.Contains([]string{"do", "then", "else", "time", "sudo", "exec"}, w[0])) {
			w = w[1:]
		}
		cmds[i] = w
	}
	return cmds
}

// usageWords returns the words of a synopsis or an inline command: brackets, alternatives' bars,
// ellipses and a trailing comment removed, quoted words kept whole. Nil unless it runs limitbench,
// go or make.
func usageWords(text string) []string {
	var words []string
	for _, c := range splitCommands(text, true) {
		for _, w := range c {
			if w = strings.TrimSuffix(w, "..."); w != "" {
				words = append(words, w)
			}
		}
	}
	if len(words) == 0 || !slices.Contains([]string{"limitbench", "bin/limitbench", "go", "make"}, words[0]) {
		return nil
	}
	return words
}

// checkCommand checks one simple command, if it is one of limitbench, make or go test.
func (c *docChecker) checkCommand(at string, words []string) {
	switch {
	case len(words) == 0:
	case filepath.Base(words[0]) == "limitbench":
		c.checkLimitbench(at, words[1:])
	case words[0] == "make":
		for _, w := range words[1:] {
			if !strings.Contains(w, "=") && !strings.HasPrefix(w, "-") && !c.makefile[w] {
				c.addf(at, "make %s: the Makefile has no target %q", w, w)
			}
		}
	case words[0] == "go" && len(words) > 1 && words[1] == "test":
		c.checkGoTest(at, words[2:])
	}
}

// checkLimitbench checks a limitbench command line's subcommand, flags and repository paths.
func (c *docChecker) checkLimitbench(at string, args []string) {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || strings.HasSuffix(args[0], ":") {
		return // the usage, or a line of output that names the command
	}
	if len(args) == 1 && (args[0] == "--version" || args[0] == "-version") {
		c.checked["limitbench command"]++
		return // main's own flag, as `limitbench version`
	}
	sub := args[0]
	c.checked["limitbench command"]++
	if _, ok := commands[sub]; !ok {
		c.addf(at, "limitbench %s: no such subcommand", sub)
		return
	}
	flags := c.flagsOf(sub)
	for i := 1; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' {
			c.checkRepoPath(at, a)
			continue
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, ok := flags[name]
		switch {
		case name == "h" || name == "help":
		case !ok:
			c.addf(at, "limitbench %s: unknown flag %s (limitbench %s -h lists %s)", sub, a, sub, strings.Join(sortedKeys(flags), ", "))
		case takesValue && !hasValue && i+1 < len(args):
			i++
			c.checkRepoPath(at, args[i])
		}
	}
}

// flagsOf returns the flags `limitbench SUB -h` lists, each with whether it takes a value.
func (c *docChecker) flagsOf(sub string) map[string]bool {
	if f, ok := c.flags[sub]; ok {
		return f
	}
	var help bytes.Buffer
	if code := run([]string{sub, "-h"}, io.Discard, &help); code != exitOK {
		c.t.Fatalf("limitbench %s -h: exit %d:\n%s", sub, code, help.String())
	}
	f := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^  -([A-Za-z0-9-]+)( \S.*)?$`).FindAllStringSubmatch(help.String(), -1) {
		f[m[1]] = m[2] != ""
	}
	if len(f) == 0 {
		c.t.Fatalf("limitbench %s -h lists no flags:\n%s", sub, help.String())
	}
	c.flags[sub] = f
	return f
}

// checkRepoPath checks that an argument that names a path inside a folder of the repository
// (not results/ or bin/, which runs and builds write) exists.
func (c *docChecker) checkRepoPath(at, arg string) {
	p := strings.Trim(arg, `"'`)
	first, _, nested := strings.Cut(p, "/")
	if !nested || strings.ContainsAny(p, "$*{}<>") || filepath.IsAbs(p) || first == "results" || first == "bin" {
		return
	}
	if fi, err := os.Stat(filepath.Join(repoRoot, first)); err != nil || !fi.IsDir() {
		return
	}
	if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
		c.addf(at, "%s names no file of the repository", arg)
	}
}

// checkGoTest checks `go test` arguments: each ./package exists; a -run or -bench pattern matches
// a test or benchmark of the package; every flag after -args is one the package's tests define.
func (c *docChecker) checkGoTest(at string, args []string) {
	var pkgs, patterns, testFlags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-args":
			for _, f := range args[i+1:] {
				if strings.HasPrefix(f, "-") {
					name, _, _ := strings.Cut(strings.TrimLeft(f, "-"), "=")
					testFlags = append(testFlags, name)
				}
			}
			i = len(args)
		case (a == "-run" || a == "-bench") && i+1 < len(args):
			patterns = append(patterns, args[i+1])
			i++
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, strings.TrimSuffix(strings.TrimSuffix(a, "..."), "/"))
		}
	}
	for _, pkg := range pkgs {
		src, ok := c.testSources(at, pkg)
		if !ok || pkg == "." {
			continue // ./... names every package
		}
		c.checkTestPatterns(at, pkg, src, patterns)
		for _, f := range testFlags {
			if !strings.Contains(src, `"`+f+`"`) {
				c.addf(at, "go test %s: its tests define no flag -%s", pkg, f)
			}
		}
	}
}

// testSources returns the text of a package's _test.go files, and whether the package exists.
func (c *docChecker) testSources(at, pkg string) (string, bool) {
	dir := filepath.Join(repoRoot, pkg)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		c.addf(at, "go test %s: no such package directory", pkg)
		return "", false
	}
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		c.t.Fatal(err)
	}
	var src strings.Builder
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			c.t.Fatal(err)
		}
		src.Write(b)
	}
	return src.String(), true
}

// checkTestPatterns checks that each -run or -bench pattern's first element matches a test,
// benchmark or example of the package (the pattern ^$, which runs none, excepted).
func (c *docChecker) checkTestPatterns(at, pkg, src string, patterns []string) {
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Example|Fuzz)\w*)\(`).FindAllStringSubmatch(src, -1) {
		names = append(names, m[1])
	}
	for _, p := range patterns {
		first, _, _ := strings.Cut(p, "/")
		if first == "^$" || first == "." {
			continue
		}
		re, err := regexp.Compile(first)
		if err != nil {
			c.addf(at, "go test %s: pattern %q: %v", pkg, p, err)
			continue
		}
		if !slices.ContainsFunc(names, re.MatchString) {
			c.addf(at, "go test %s: no test or benchmark matches %q", pkg, p)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestDocsCatches plants one mistake per page and checks that TestDocs's checker reports it, and
// that a page of correct examples gets no report.
func TestDocsCatches(t *testing.T) {
	fenced := func(info, body string) string { return "```" + info + "\n" + body + "```\n" }
	for _, tt := range []struct {
		name, page, want string // want "": no problem
	}{
		{"correct", fenced("sh", "limitbench run --rate 5 --pin=false --out results/x scenarios/smoke.yaml # a comment\n"+
			"make test && go test ./cmd/limitbench -run Docs\nlimitbench gate --baseline a/result.json b/result.json\n") +
			fenced("usage", "limitbench hunt [--budget 60s] [--topology single|cluster] SCENARIO.yaml\n") +
			fenced("yaml", "version: 1\nname: example\narrival: {rate: 10}\n") +
			fenced("yaml fragment", "faults:\n  - {at: 1s, kind: restart}\n") +
			fenced("yaml file=scenarios/smoke.yaml", "topologies: [single]\nduration: 2s\n") +
			fenced("csv trace", "offset,client,subject,cost\n0s,a,u,1\n1ms,b,u,1\n") +
			"See [Set up](README.md#set-up) and `limitbench list --json`.\n", ""},
		{"bare fence", fenced("", "limitbench list\n"), "without an info string"},
		{"unknown subcommand", fenced("sh", "limitbench runs scenarios/smoke.yaml\n"), "no such subcommand"},
		{"unknown flag", fenced("sh", "bin/limitbench run --rates 5 scenarios/smoke.yaml\n"), "unknown flag --rates"},
		{"flag of another command", "Run `limitbench report --repeat 6 r.json`.\n", "unknown flag --repeat"},
		{"synopsis", fenced("usage", "limitbench capacity [--algorithm A] [--sloo X]\n"), "unknown flag --sloo"},
		{"missing file", fenced("sh", "limitbench run scenarios/no-such.yaml\n"), "names no file"},
		{"make target", fenced("sh", "make tests\n"), `no target "tests"`},
		{"go test package", fenced("sh", "go test ./internal/no-such\n"), "no such package"},
		{"go test name", "`go test ./cmd/limitbench -run TestNoSuchThing`\n", "no test or benchmark matches"},
		{"go test flag", fenced("sh", "go test ./bench -run '^$' -bench Algorithms -args -no-such-flag 2\n"), "define no flag -no-such-flag"},
		{"scenario", fenced("yaml", "version: 1\nclient: 4\n"), "does not load"},
		{"fragment", fenced("yaml fragment", "a: [\n"), "does not parse"},
		{"named like a file", fenced("yaml", "version: 1\nname: smoke\n"), "mark the block file=scenarios/smoke.yaml"},
		{"not the file", fenced("yaml file=scenarios/smoke.yaml", "topologies: [single]\nduration: 3s\n"), "not that file's"},
		{"bad trace", fenced("csv trace", "offset,client,subject,cost\n1s,a,u,1\n0s,b,u,1\n"), "does not load as a scenario's arrival.trace"},
		{"missing link", "See [the page](docs/no-such.md).\n", "no such file"},
		{"missing anchor", "See [Set up](README.md#no-such-heading).\n", "no heading with the anchor #no-such-heading"},
		{"missing anchor here", "# Title\nSee [below](#below).\n", "no heading with the anchor #below"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := newDocChecker(t).checkPage(t, "page.md", tt.page)
			switch {
			case tt.want == "" && len(got) > 0:
				t.Errorf("problems in a correct page:\n%s", strings.Join(got, "\n"))
			case tt.want != "" && !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tt.want) }):
				t.Errorf("problems = %q; want one containing %q", got, tt.want)
			}
		})
	}
}
